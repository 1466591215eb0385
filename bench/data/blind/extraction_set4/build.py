"""Blind extraction set 4: a regional bus operator ("Northmere & Vale Buses").

All entries, sentences and gold triples below were written by hand. This script only
checks them and writes extraction_set4.json next to itself. Standard library only.

Run: python3 build.py
"""
import json
import os
import re
import sys
from collections import Counter

DOMAIN = "regional_bus_operator"

NOTE = (
    "Northmere & Vale Buses, a made-up regional bus operator with two depots working a "
    "contract for the Northmere Combined Authority. Hand-written by an engineer who never "
    "saw the product's code, prompts or tuning data (2026-12-02). Gold holds only what a "
    "sentence states as true now, in canonical direction, using entry titles. Negation, "
    "conditionals, plans, history, hedges, questions and reported speech get no gold."
)

RELATIONS = [
    {
        "name": "requires",
        "inverse": "required_by",
        "description": "The source cannot be done or cannot work without the target "
                       "(a prerequisite, input or dependency).",
        "phrases": ["requires", "needs", "depends on", "relies on", "cannot run without",
                    "must have"],
        "inverse_phrases": ["is required by", "is needed for", "is a prerequisite for"],
    },
    {
        "name": "owned_by",
        "inverse": "owns",
        "description": "The source (a system, document, procedure, place or product) is the "
                       "responsibility of the target team or role.",
        "phrases": ["is owned by", "belongs to", "is maintained by", "is the responsibility of",
                    "is run by"],
        "inverse_phrases": ["owns", "is responsible for", "maintains", "runs"],
    },
    {
        "name": "precedes",
        "inverse": "follows",
        "description": "The source step happens before the target step in the usual sequence.",
        "phrases": ["precedes", "comes before", "happens before", "is done before",
                    "must be completed before"],
        "inverse_phrases": ["follows", "comes after", "happens after", "is done after"],
    },
    {
        "name": "part_of",
        "inverse": "includes",
        "description": "The source is a component, step or sub-area of the target.",
        "phrases": ["is part of", "is a step of", "is one of the stages of", "sits within",
                    "is inside"],
        "inverse_phrases": ["includes", "contains", "consists of", "comprises"],
    },
    {
        "name": "supersedes",
        "inverse": "superseded_by",
        "description": "The source replaced the target, which is retired or withdrawn.",
        "phrases": ["supersedes", "replaces", "replaced", "took over from"],
        "inverse_phrases": ["is superseded by", "was replaced by", "has been replaced by"],
    },
    {
        "name": "reported_to",
        "inverse": "receives",
        "description": "The source (a report, document, check, system output) is sent, "
                       "submitted or escalated to the target team, role or external body.",
        "phrases": ["is reported to", "is sent to", "is submitted to", "is escalated to",
                    "goes to", "is handed in to"],
        "inverse_phrases": ["receives", "gets a copy of", "is sent"],
    },
]

# (title, aliases, kind)
ENTRIES = [
    # teams
    ("Dispatch", ["Bus Control", "control room"], "team"),
    ("Depot Engineering", ["the workshop", "engineering", "fitters"], "team"),
    ("Rostering Team", ["rostering", "roster office"], "team"),
    ("Revenue Protection", ["RP", "revenue team", "inspectors"], "team"),
    ("Scheduling Team", ["scheduling", "schedulers"], "team"),
    ("Safety and Compliance", ["SHEQ", "compliance team"], "team"),
    ("Customer Services", ["customer care", "CS team"], "team"),
    # roles
    ("Operations Director", ["Ops Director", "OD"], "role"),
    ("Depot Manager", ["DM", "depot boss"], "role"),
    ("Duty Controller", ["DC", "controller"], "role"),
    ("Fleet Engineer", ["fleet eng", "chief engineer"], "role"),
    ("Transport Manager", ["TM", "O-licence holder"], "role"),
    # systems
    ("Timeplan", ["the scheduling suite", "TP"], "system"),
    ("CrewDesk", ["Crew Desk", "the rostering system"], "system"),
    ("AVL Tracker", ["AVL", "the tracker"], "system"),
    ("Validor ETM", ["ETM", "Validor", "ticket machines"], "system"),
    ("Farebox 2000", ["FB2000", "the old fareboxes"], "system"),
    ("Fleetwise", ["the maintenance system", "FW"], "system"),
    ("Incident Portal", ["the portal", "incident system"], "system"),
    # documents
    ("Incident Spreadsheet", ["the old incident log", "incident sheet"], "document"),
    ("Authority Contract", ["the contract", "tender contract", "NCA contract"], "document"),
    ("December Timetable", ["winter timetable", "Dec timetable"], "document"),
    ("May Timetable", ["summer timetable"], "document"),
    ("Incident Report", ["IR", "incident form"], "document"),
    ("Duty Board", ["the board", "duty sheet"], "document"),
    ("Defect Card", ["defect slip", "defect sheet"], "document"),
    # procedures
    ("Walkround Check", ["walkround", "daily check", "first-use check"], "procedure"),
    ("Safety Inspection", ["PMI", "six-weekly inspection"], "procedure"),
    ("Run-Out", ["pull-out", "runout"], "procedure"),
    ("Run-In", ["running in", "runin"], "procedure"),
    ("Fuel and Wash", ["the wash", "fuelling"], "procedure"),
    ("Cash-Up", ["paying in", "cashing up"], "procedure"),
    ("Service Registration", ["bus service registration", "registration"], "procedure"),
    ("Timetable Launch", ["change day", "go-live"], "procedure"),
    ("Driver Induction", ["induction"], "procedure"),
    ("Route Learning", ["route training", "road learning"], "procedure"),
    # places
    ("Eastgate Depot", ["Eastgate"], "place"),
    ("Millbrook Depot", ["Millbrook", "the small depot"], "place"),
    ("Central Bus Station", ["the bus station", "CBS"], "place"),
    ("Inspection Pit", ["the pit", "Pit 2"], "place"),
    # products
    ("Dayrider", ["day ticket", "Dayrider ticket"], "product"),
    ("Northmere Smartcard", ["Tapcard", "the smartcard"], "product"),
    # vendors / external bodies
    ("Northmere Combined Authority", ["NCA", "the authority", "the transit authority"], "vendor"),
    ("Brannock Commercial", ["Brannock"], "vendor"),
]

# short names for the gold triples (titles are still what is written out)
DIS, ENG, ROS, RP, SCH, SHQ, CUS = ("Dispatch", "Depot Engineering", "Rostering Team",
                                    "Revenue Protection", "Scheduling Team",
                                    "Safety and Compliance", "Customer Services")
OPD, DMG, DCT, FEN, TMG = ("Operations Director", "Depot Manager", "Duty Controller",
                           "Fleet Engineer", "Transport Manager")
TPL, CRW, AVL, ETM, FBX, FLW, POR = ("Timeplan", "CrewDesk", "AVL Tracker", "Validor ETM",
                                     "Farebox 2000", "Fleetwise", "Incident Portal")
ISP, CON, DEC, MAY, IRP, DBD, DCD = ("Incident Spreadsheet", "Authority Contract",
                                     "December Timetable", "May Timetable", "Incident Report",
                                     "Duty Board", "Defect Card")
WRC, PMI, ROUT, RIN, FUW, CSH, REG, TLN, IND, RLN = (
    "Walkround Check", "Safety Inspection", "Run-Out", "Run-In", "Fuel and Wash", "Cash-Up",
    "Service Registration", "Timetable Launch", "Driver Induction", "Route Learning")
EGD, MBD, CBS, PIT = ("Eastgate Depot", "Millbrook Depot", "Central Bus Station",
                      "Inspection Pit")
DAY, CRD, NCA, BRN = ("Dayrider", "Northmere Smartcard", "Northmere Combined Authority",
                      "Brannock Commercial")

REQ, OWN, PRE, PART, SUP, REP = ("requires", "owned_by", "precedes", "part_of", "supersedes",
                                 "reported_to")

# (text, gold, cue or None)
SENTENCES = [
    # ---------------------------------------------------------------- plain assertions
    ("Drivers do the Walkround Check first and only then start the Run-Out.",
     [[WRC, PRE, ROUT]], None),
    ("Every Incident Report goes to Safety and Compliance within 24 hours of the event.",
     [[IRP, REP, SHQ]], None),
    ("The December Timetable replaced the May Timetable on Sunday 6 December.",
     [[DEC, SUP, MAY]], None),
    ("Validor ETM took over from Farebox 2000 across the whole fleet in 2023.",
     [[ETM, SUP, FBX]], None),
    ("Eastgate has the company's only Inspection Pit.",
     [[PIT, PART, EGD]], None),
    ("Timeplan belongs to the Scheduling Team.",
     [[TPL, OWN, SCH]], None),
    ("Dispatch is responsible for the AVL Tracker, including the on-bus units.",
     [[AVL, OWN, DIS]], None),
    ("Revenue Protection maintains the ticket machines.",
     [[ETM, OWN, RP]], None),
    ("The Incident Portal is SHEQ's system; nobody else can change its forms.",
     [[POR, OWN, SHQ]], None),
    ("Cash-Up relies on the end-of-shift waybill printed by the ETM.",
     [[CSH, REQ, ETM]], None),
    ("A Dayrider cannot be issued without a working Validor.",
     [[DAY, REQ, ETM]], None),
    ("Route Learning is one of the stages of Driver Induction.",
     [[RLN, PART, IND]], None),
    ("Cash-Up has to be done before the bus goes through the Fuel and Wash.",
     [[CSH, PRE, FUW]], None),
    ("PMI results go to the Transport Manager, who signs the annual licence return.",
     [[PMI, REP, TMG]], None),
    ("Bus Control receives the Duty Board at 04:30 each morning.",
     [[DBD, REP, DIS]], None),
    ("The Ops Director owns the Authority Contract and answers to the board of directors for it.",
     [[CON, OWN, OPD]], None),
    ("The Depot Manager runs Eastgate.",
     [[EGD, OWN, DMG]], None),
    ("Pull-out is the Duty Controller's call, every morning, no exceptions.",
     [[ROUT, OWN, DCT]], None),
    ("Service Registration sits with the schedulers.",
     [[REG, OWN, SCH]], None),
    ("CrewDesk pulls its duties straight out of Timeplan and cannot build a roster on its own.",
     [[CRW, REQ, TPL]], None),
    ("The Incident Portal replaced the Incident Spreadsheet last spring.",
     [[POR, SUP, ISP]], None),
    ("The Dayrider is written into the Authority Contract as a capped fare.",
     [[DAY, PART, CON]], None),
    ("Millbrook answers to the Depot Manager as well.",
     [[MBD, OWN, DMG]], None),
    ("Brannock Commercial does our body repairs and is managed by the Fleet Engineer.",
     [[BRN, OWN, FEN]], None),
    ("The Walkround Check is owned by the Transport Manager in his role as O-licence holder.",
     [[WRC, OWN, TMG]], None),
    ("Safety Inspection: owner is the Fleet Engineer.",
     [[PMI, OWN, FEN]], None),
    ("AVL is Bus Control's.",
     [[AVL, OWN, DIS]], None),
    ("No Duty Board, no Run-Out.",
     [[ROUT, REQ, DBD]], None),
    ("The Incident Portal went live in April. It replaced the incident sheet and is looked after by SHEQ.",
     [[POR, SUP, ISP], [POR, OWN, SHQ]], None),
    ("Before any Run-Out: the Walkround Check.",
     [[WRC, PRE, ROUT]], None),
    ("- Owner of Cash-Up: Revenue Protection",
     [[CSH, OWN, RP]], None),
    ("The Run-Out happens before the Run-In, obviously, but people still ask.",
     [[ROUT, PRE, RIN]], None),
    ("Timetable Launch comes after Service Registration.",
     [[REG, PRE, TLN]], None),
    ("Change day needs the final winter timetable loaded and checked.",
     [[TLN, REQ, DEC]], None),
    ("Tapcard is the authority's product, not ours.",
     [[CRD, OWN, NCA]], None),
    ("The PMI depends on Pit 2 being free for at least three hours.",
     [[PMI, REQ, PIT]], None),
    ("Cash-Up totals are passed to Revenue Protection every night.",
     [[CSH, REP, RP]], None),
    ("A defect slip lands with the fitters before the end of the shift.",
     [[DCD, REP, ENG]], None),
    ("Customer Services gets a copy of every Incident Report.",
     [[IRP, REP, CUS]], None),
    ("Validor ETM is what we swapped the FB2000 for.",
     [[ETM, SUP, FBX]], None),
    ("The Fuel and Wash is part of the Run-In at both depots.",
     [[FUW, PART, RIN]], None),
    ("The Rostering Team can do nothing at all without CrewDesk.",
     [[ROS, REQ, CRW]], None),
    ("Registration is a prerequisite for change day.",
     [[TLN, REQ, REG]], None),
    ("The Northmere Smartcard only works on a Validor reader.",
     [[CRD, REQ, ETM]], None),
    ("Pit 2 is in the back shed at Eastgate.",
     [[PIT, PART, EGD]], None),
    ("The summer timetable is gone; the winter timetable supersedes it.",
     [[DEC, SUP, MAY]], None),
    ("Cash-Up goes first, then the wash.",
     [[CSH, PRE, FUW]], None),
    ("The duty sheet is the roster office's, whatever Bus Control says.",
     [[DBD, OWN, ROS]], None),
    ("FB2000 was replaced by the Validor ETM, depot by depot.",
     [[ETM, SUP, FBX]], "passive"),

    # ---------------------------------------------------------------- passive
    ("The Authority Contract is held by the Ops Director.",
     [[CON, OWN, OPD]], "passive"),
    ("Driver Induction is run by Safety and Compliance.",
     [[IND, OWN, SHQ]], "passive"),
    ("Route training is covered within Driver Induction.",
     [[RLN, PART, IND]], "passive"),
    ("Punctuality data from the AVL Tracker is submitted to the NCA each four-week period.",
     [[AVL, REP, NCA]], "passive"),
    ("Each Defect Card is handed in to Depot Engineering at the end of the duty.",
     [[DCD, REP, ENG]], "passive"),
    ("A serious Incident Report is escalated to the transit authority within two hours.",
     [[IRP, REP, NCA]], "passive"),
    ("The Walkround Check is followed by the Run-Out, never the other way round.",
     [[WRC, PRE, ROUT]], "passive"),
    ("Every new entry in the Incident Portal is copied to the Depot Manager.",
     [[POR, REP, DMG]], "passive"),
    ("Fleetwise is looked after by Depot Engineering, who also hold the admin passwords.",
     [[FLW, OWN, ENG]], "passive"),
    ("The summer timetable has been withdrawn and superseded by the Dec timetable.",
     [[DEC, SUP, MAY]], "passive"),

    # ---------------------------------------------------------------- relative clauses
    ("The Walkround Check, which the Transport Manager owns, must be completed before the Run-Out.",
     [[WRC, OWN, TMG], [WRC, PRE, ROUT]], "relative_clause"),
    ("Drivers hand their ETM waybill to Revenue Protection, which owns Cash-Up.",
     [[CSH, OWN, RP]], "relative_clause"),
    ("The Duty Board that Bus Control receives each morning is printed from CrewDesk.",
     [[DBD, REP, DIS]], "relative_clause"),
    ("Eastgate Depot, whose pit is used for every six-weekly inspection, is run by the Depot Manager.",
     [[EGD, OWN, DMG]], "relative_clause"),
    ("The Incident Spreadsheet, which the Incident Portal replaced, is read-only now.",
     [[POR, SUP, ISP]], "relative_clause"),
    ("Route Learning, which new drivers do in their second week, is part of Driver Induction.",
     [[RLN, PART, IND]], "relative_clause"),
    ("The contract that the NCA signed with us includes the Dayrider.",
     [[DAY, PART, CON]], "relative_clause"),
    ("Timetable Launch, which follows Service Registration by at least 70 days, is owned by the Scheduling Team.",
     [[REG, PRE, TLN], [TLN, OWN, SCH]], "relative_clause"),
    ("The fitters, who also own Fleetwise, get every Defect Card.",
     [[FLW, OWN, ENG], [DCD, REP, ENG]], "relative_clause"),
    ("Timeplan, which the Scheduling Team owns, is needed by CrewDesk every night.",
     [[TPL, OWN, SCH], [CRW, REQ, TPL]], "relative_clause"),
    ("Anything the Fleet Engineer signs off goes into Fleetwise, which Depot Engineering maintains.",
     [[FLW, OWN, ENG]], "relative_clause"),
    ("The controller who takes the early shift at Millbrook phones the Depot Manager about the Run-Out.",
     [], "relative_clause"),

    # ---------------------------------------------------------------- wrong pair
    ("Fleetwise, not the AVL Tracker, is owned by Depot Engineering.",
     [[FLW, OWN, ENG]], "wrong_pair"),
    ("The Safety Inspection at Eastgate requires the Inspection Pit.",
     [[PMI, REQ, PIT]], "wrong_pair"),
    ("Dispatch passes the Defect Card from the Duty Controller straight on to Depot Engineering.",
     [[DCD, REP, ENG]], "wrong_pair"),
    ("Revenue Protection, working alongside Customer Services, owns Cash-Up.",
     [[CSH, OWN, RP]], "wrong_pair"),
    ("The Incident Report, once SHEQ has checked it, goes to the NCA.",
     [[IRP, REP, NCA]], "wrong_pair"),
    ("Cash-Up happens in the office beside the Inspection Pit, before the Fuel and Wash.",
     [[CSH, PRE, FUW]], "wrong_pair"),
    ("Bus Control, rather than the Transport Manager, owns the AVL Tracker.",
     [[AVL, OWN, DIS]], "wrong_pair"),
    ("The Tapcard, which the bus station kiosk also sells, depends on Validor ETM.",
     [[CRD, REQ, ETM]], "wrong_pair"),
    ("The Duty Controller reads the Duty Board to the drivers, but the roster office owns it.",
     [[DBD, OWN, ROS]], "wrong_pair"),
    ("Timetable Launch at the Central Bus Station needs the December Timetable.",
     [[TLN, REQ, DEC]], "wrong_pair"),
    ("The Depot Manager at Millbrook forwards Eastgate's PMI backlog to the Fleet Engineer.",
     [], "wrong_pair"),

    # ---------------------------------------------------------------- coordination
    ("Timeplan and CrewDesk belong to Scheduling and Rostering respectively.",
     [[TPL, OWN, SCH], [CRW, OWN, ROS]], "coordination"),
    ("Both the Dayrider and the Tapcard require Validor ETM.",
     [[DAY, REQ, ETM], [CRD, REQ, ETM]], "coordination"),
    ("Cash-Up and Fuel and Wash are both part of the Run-In.",
     [[CSH, PART, RIN], [FUW, PART, RIN]], "coordination"),
    ("An Incident Report goes to SHEQ and, where it involves a hospital visit, to the NCA as well.",
     [[IRP, REP, SHQ]], "coordination"),
    ("The Depot Manager runs both Eastgate and Millbrook.",
     [[EGD, OWN, DMG], [MBD, OWN, DMG]], "coordination"),
    ("Dispatch and the Duty Controller both receive the Duty Board.",
     [[DBD, REP, DIS], [DBD, REP, DCT]], "coordination"),
    ("Timeplan belongs to the schedulers, CrewDesk to the roster office.",
     [[TPL, OWN, SCH], [CRW, OWN, ROS]], "coordination"),
    ("Fleetwise replaced the old paper job cards and now sits with the workshop.",
     [[FLW, OWN, ENG]], "coordination"),
    ("The roster office owns CrewDesk and the Duty Board.",
     [[CRW, OWN, ROS], [DBD, OWN, ROS]], "coordination"),
    ("SHEQ owns the Incident Portal and Driver Induction, and the Fleet Engineer the PMI.",
     [[POR, OWN, SHQ], [IND, OWN, SHQ], [PMI, OWN, FEN]], "coordination"),
    ("The Depot Manager and the Transport Manager share an office at Eastgate.",
     [], "coordination"),

    # ---------------------------------------------------------------- lists
    ("Revenue Protection looks after: the ETM estate, Cash-Up, the Dayrider.",
     [[ETM, OWN, RP], [CSH, OWN, RP], [DAY, OWN, RP]], "list"),
    ("The Run-In consists of: 1) Cash-Up, 2) Fuel and Wash, 3) parking up in the shed.",
     [[CSH, PART, RIN], [FUW, PART, RIN], [CSH, PRE, FUW]], "list"),
    ("Systems Bus Control depends on: AVL Tracker, CrewDesk, the Incident Portal.",
     [[DIS, REQ, AVL], [DIS, REQ, CRW], [DIS, REQ, POR]], "list"),
    ("Handover items for the Duty Controller: AVL Tracker faults, the Duty Board, any open Incident Report.",
     [], "list"),
    ("Sequence for a new timetable: Service Registration, then Timetable Launch, then the first Run-Out on the new times.",
     [[REG, PRE, TLN], [TLN, PRE, ROUT]], "list"),
    ("The Authority Contract covers three fares (Dayrider, single, return) and the Northmere Smartcard.",
     [[DAY, PART, CON], [CRD, PART, CON]], "list"),
    ("Owners, for the wiki: Timeplan - Scheduling Team; Fleetwise - Depot Engineering; Incident Portal - SHEQ.",
     [[TPL, OWN, SCH], [FLW, OWN, ENG], [POR, OWN, SHQ]], "list"),
    ("Things the Transport Manager receives every period: PMI results, the AVL punctuality pack and a summary from the portal.",
     [[PMI, REP, TMG], [AVL, REP, TMG], [POR, REP, TMG]], "list"),

    # ---------------------------------------------------------------- long distance
    ("Fleetwise, the system that went in after the 2021 audit, with its job-card screens and the parts ledger nobody likes, is in the end Depot Engineering's responsibility.",
     [[FLW, OWN, ENG]], "distant"),
    ("Service Registration, for every route change whether it adds a stop, moves a terminus or only shifts a departure by five minutes, has to come before Timetable Launch.",
     [[REG, PRE, TLN]], "distant"),
    ("The Tapcard, for all the talk about apps and contactless and bank cards at the front door, still needs the Validor ETM.",
     [[CRD, REQ, ETM]], "distant"),
    ("The Incident Report, whether it is about a slip on the lower deck, a mirror strike on the high street or an abusive passenger at the bus station, always ends up with SHEQ.",
     [[IRP, REP, SHQ]], "distant"),
    ("The Inspection Pit, dug in 1987, extended in 2004, relit last winter and still too narrow for the new double-deckers, belongs to Eastgate Depot.",
     [[PIT, PART, EGD]], "distant"),

    # ---------------------------------------------------------------- negation
    ("Customer Services does not own the Incident Portal.",
     [], "negation"),
    ("Fleetwise doesn't need AVL for anything.",
     [], "negation"),
    ("The Duty Board is never sent to Customer Services.",
     [], "negation"),
    ("Rostering doesn't maintain Timeplan; the Scheduling Team does.",
     [[TPL, OWN, SCH]], "negation"),
    ("Neither Dispatch nor the roster office receives the Defect Card; it goes to the workshop.",
     [[DCD, REP, ENG]], "negation"),
    ("The Safety Inspection is not part of the Walkround Check, whatever the new drivers think.",
     [], "negation"),
    ("Millbrook Depot does not have an Inspection Pit.",
     [], "negation"),
    ("Brannock Commercial is not responsible for the ticket machines.",
     [], "negation"),
    ("Cash-Up isn't done before the Run-Out.",
     [], "negation"),
    ("The Northmere Smartcard does not replace the Dayrider.",
     [], "negation"),
    ("No PMI is ever reported to the Depot Manager directly.",
     [], "negation"),

    # ---------------------------------------------------------------- conditional
    ("If the AVL Tracker is down, Bus Control needs the paper Duty Board.",
     [], "conditional"),
    ("Should a PMI fail, the results go to the Transport Manager the same day.",
     [], "conditional"),
    ("Where a bus has missed its Walkround Check, the Run-Out has to wait for the Duty Controller.",
     [], "conditional"),
    ("When Eastgate floods, the Safety Inspection would need the pit at Millbrook.",
     [], "conditional"),
    ("Unless Timeplan is updated first, CrewDesk would roster last season's duties.",
     [], "conditional"),
    ("In case the portal is offline, Incident Reports are emailed to SHEQ instead.",
     [], "conditional"),
    ("If Brannock can't take a bus, the Fleet Engineer owns the repair.",
     [], "conditional"),
    ("A Dayrider would require a driver override if the Validor screen freezes.",
     [], "conditional"),

    # ---------------------------------------------------------------- history
    ("Until 2019 the Duty Board was owned by Dispatch.",
     [], "history"),
    ("Farebox 2000 used to be maintained by Depot Engineering.",
     [], "history"),
    ("We used to send the Incident Spreadsheet to the Ops Director every Friday.",
     [], "history"),
    ("The Incident Spreadsheet was once owned by the Depot Manager.",
     [], "history"),
    ("Before Fleetwise, every Defect Card went to the Fleet Engineer in person.",
     [], "history"),
    ("Millbrook no longer has an Inspection Pit; it was filled in when the shed was rebuilt.",
     [], "history"),
    ("The May Timetable used to require a separate Service Registration for each route.",
     [], "history"),
    ("Back when we had the old fareboxes, Cash-Up was run by the Depot Manager.",
     [], "history"),

    # ---------------------------------------------------------------- plan
    ("From March the Incident Portal will be owned by the Transport Manager.",
     [], "plan"),
    ("Scheduling plans to feed CrewDesk from Timeplan directly instead of through the weekly export.",
     [], "plan"),
    ("We intend to build an Inspection Pit at Millbrook next year.",
     [], "plan"),
    ("Next year's Authority Contract is expected to include the Tapcard cap.",
     [], "plan"),
    ("The Depot Manager is going to take over Fuel and Wash from Depot Engineering.",
     [], "plan"),
    ("Eventually the AVL Tracker should report straight into the Incident Portal.",
     [], "plan"),
    ("A new ticketing app is due to replace Validor ETM for the Dayrider in 2028.",
     [], "plan"),

    # ---------------------------------------------------------------- hedges, questions, reported speech (trap)
    ("Does the Dayrider still need the ETM, or can drivers sell it from the phone app?",
     [], "trap"),
    ("Who owns the AVL Tracker now, Dispatch or SHEQ?",
     [], "trap"),
    ("I think Brannock is managed by the Fleet Engineer, but check with the Depot Manager.",
     [], "trap"),
    ("Cash-Up probably belongs to Revenue Protection.",
     [], "trap"),
    ("Apparently the NCA receives every Incident Report directly, which would surprise me.",
     [], "trap"),
    ("The Ops Director said the Authority Contract requires a weekly AVL return.",
     [], "trap"),
    ("According to the drivers, the Walkround Check belongs to Depot Engineering.",
     [], "trap"),
    ("Maybe the December Timetable only supersedes the May Timetable at Millbrook.",
     [], "trap"),
    ("Is Route Learning still part of Driver Induction?",
     [], "trap"),
    ("Someone in the roster office claims the Duty Board is sent to Bus Control at midnight.",
     [], "trap"),
    ("It seems the Tapcard might need a Validor firmware update.",
     [], "trap"),

    # ---------------------------------------------------------------- other senses / no configured relation (trap)
    ("The Duty Controller requires a lot of patience on a Monday at Central Bus Station.",
     [], "trap"),
    ("Revenue Protection owns up to the Dayrider pricing error in its weekly note.",
     [], "trap"),
    ("Bus Control follows the Duty Board to the letter.",
     [], "trap"),
    ("The Run-Out ran late because the Fuel and Wash queue backed up.",
     [], "trap"),
    ("Brannock replaced two windscreens on buses from Millbrook.",
     [], "trap"),
    ("The Depot Manager is part of the reason the Run-Out starts at 04:45.",
     [], "trap"),
    ("Validor ETM tickets are checked by Revenue Protection at the bus station.",
     [], "trap"),
    ("The key to the Inspection Pit is held by the Depot Manager.",
     [], "trap"),
    ("SHEQ's budget line for the Incident Portal is owned by the Ops Director.",
     [], "trap"),
    ("The Dayrider leaflet, which is part of the Customer Services welcome pack, is stocked at the bus station.",
     [], "trap"),
    ("The Timeplan manual replaced the old binder in the Scheduling Team's office.",
     [], "trap"),
    ("Millbrook's buses go to Eastgate for their PMI.",
     [], "trap"),
    ("The schedulers build the December Timetable in Timeplan.",
     [], "trap"),
    ("Dispatch sits above the Central Bus Station concourse.",
     [], "trap"),
    ("The Fleet Engineer's van follows the Run-Out to the first timing point.",
     [], "trap"),
    ("Drivers skip the Fuel and Wash on Christmas Eve and go straight from Cash-Up to the canteen.",
     [], "trap"),
    ("The Transport Manager's notes on the Safety Inspection are sent around the office like gossip.",
     [], "trap"),
    ("A template that Customer Services owns is used for the Incident Report cover letter.",
     [], "trap"),
    ("Where the May Timetable and the Authority Contract disagree, the contract supersedes it.",
     [], "trap"),
]

ALLOWED_CUES = {"relative_clause", "wrong_pair", "coordination", "list", "passive", "distant",
                "trap", "negation", "conditional", "history", "plan"}
ALLOWED_KINDS = {"team", "role", "system", "document", "procedure", "place", "product", "vendor"}


def names_in(text, names):
    t = text.lower()
    found = []
    for n in names:
        pat = r"(?<![\w-])" + re.escape(n.lower()) + r"(?![\w-])"
        if re.search(pat, t):
            found.append(n)
    return found


def check():
    errors = []
    titles = [e[0] for e in ENTRIES]
    if len(set(titles)) != len(titles):
        errors.append("duplicate title")
    all_names = {}
    for title, aliases, kind in ENTRIES:
        if kind not in ALLOWED_KINDS:
            errors.append(f"bad kind {kind} for {title}")
        for n in [title] + aliases:
            key = n.lower()
            if key in all_names and all_names[key] != title:
                errors.append(f"name {n!r} used by {all_names[key]} and {title}")
            all_names[key] = title
    rel_names = {r["name"] for r in RELATIONS}
    if len(RELATIONS) != 6:
        errors.append("need 6 relations")
    seen = set()
    for text, gold, cue in SENTENCES:
        if text in seen:
            errors.append(f"duplicate sentence: {text}")
        seen.add(text)
        if cue is not None and cue not in ALLOWED_CUES:
            errors.append(f"bad cue {cue}: {text}")
        mentioned = {all_names[n.lower()] for n in names_in(text, all_names.keys())}
        if len(mentioned) < 2:
            errors.append(f"names fewer than 2 entries ({sorted(mentioned)}): {text}")
        gs = set()
        for trip in gold:
            a, r, b = trip
            if a not in titles or b not in titles:
                errors.append(f"unknown title in {trip}: {text}")
            if r not in rel_names:
                errors.append(f"unknown relation in {trip}")
            if a == b:
                errors.append(f"self-loop {trip}")
            if a not in mentioned or b not in mentioned:
                errors.append(f"gold end not in sentence {trip}: {text}")
            if tuple(trip) in gs:
                errors.append(f"duplicate triple {trip}")
            gs.add(tuple(trip))
    return errors


def main():
    errors = check()
    if errors:
        for e in errors:
            print("ERROR:", e)
        sys.exit(1)
    out = {
        "domain": DOMAIN,
        "note": NOTE,
        "relations": RELATIONS,
        "entries": [{"title": t, "aliases": a, "kind": k} for t, a, k in ENTRIES],
        "sentences": [],
    }
    for text, gold, cue in SENTENCES:
        s = {"text": text, "gold": [list(g) for g in gold]}
        if cue is not None:
            s["cue"] = cue
        out["sentences"].append(s)
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "extraction_set4.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1, ensure_ascii=False)
        f.write("\n")

    # counts for the README
    n = len(SENTENCES)
    with_gold = sum(1 for _, g, _ in SENTENCES if g)
    rel = Counter(t[1] for _, g, _ in SENTENCES for t in g)
    cues = Counter()
    for _, g, c in SENTENCES:
        cues[(c or "(none)", bool(g))] += 1
    print(f"OK: {len(ENTRIES)} entries, {n} sentences, {with_gold} with gold, {n - with_gold} with [], "
          f"{sum(rel.values())} triples")
    print("triples per relation:", dict(rel.most_common()))
    order = ["(none)", "relative_clause", "wrong_pair", "coordination", "list", "passive",
             "distant", "trap", "negation", "conditional", "history", "plan"]
    print("| cue | total | gold non-empty | gold [] |")
    print("|---|---|---|---|")
    for c in order:
        a, b = cues[(c, True)], cues[(c, False)]
        print(f"| {c} | {a + b} | {a} | {b} |")
    print("kinds:", dict(Counter(k for _, _, k in ENTRIES)))


if __name__ == "__main__":
    main()
