"""Blind extraction set 3 (municipal water utility).

Hand-written data held as Python literals. Running this file checks the data
and writes extraction_set3.json next to it. Stdlib only.
"""
import json
import os
import re
import sys
from collections import Counter

DOMAIN = "municipal_water_utility"
NOTE = ("Held-out relation-extraction set for a made-up municipal water utility "
        "(Kestrel Bay Water). Written by hand on 2026-12-02 by an engineer who never saw "
        "the product's code, prompts or tuning data. Gold holds only what each sentence "
        "states as currently true, with canonical titles and relation direction.")

RELATIONS = [
    {"name": "requires", "inverse": "required_by",
     "description": "The first entry cannot be done or cannot work without the second entry.",
     "phrases": ["requires", "needs", "depends on", "cannot start without", "relies on"],
     "inverse_phrases": ["is required by", "is needed for", "is a prerequisite for"]},
    {"name": "owned_by", "inverse": "owns",
     "description": "The second entry (a team or role) is accountable for the first entry.",
     "phrases": ["is owned by", "belongs to", "is maintained by", "is the responsibility of"],
     "inverse_phrases": ["owns", "is responsible for", "maintains", "looks after"]},
    {"name": "precedes", "inverse": "follows",
     "description": "The first procedure or step happens before the second one in normal operation.",
     "phrases": ["precedes", "comes before", "happens before", "is followed by"],
     "inverse_phrases": ["follows", "comes after", "happens after", "is preceded by"]},
    {"name": "part_of", "inverse": "has_part",
     "description": "The first entry is a component, section or sub-site of the second entry.",
     "phrases": ["is part of", "is a component of", "sits inside", "is within"],
     "inverse_phrases": ["includes", "contains", "consists of", "is made up of"]},
    {"name": "supersedes", "inverse": "superseded_by",
     "description": "The first entry replaced the second entry, which is retired or being retired.",
     "phrases": ["supersedes", "replaces", "replaced", "took over from"],
     "inverse_phrases": ["is superseded by", "was replaced by", "is replaced by"]},
    {"name": "monitored_by", "inverse": "monitors",
     "description": ("The first entry (a site, asset, instrument or system) is continuously watched "
                     "or alarmed by the second entry (a system, team, role or vendor)."),
     "phrases": ["is monitored by", "is watched by", "is polled by", "alarms to"],
     "inverse_phrases": ["monitors", "watches", "polls", "keeps an eye on"]},
]

# (title, aliases, kind)
ENTRIES = [
    ("Distribution Crew", ["mains crew", "dist crew"], "team"),
    ("Treatment Operations", ["treatment ops", "plant operators"], "team"),
    ("Water Quality Lab", ["WQ lab", "the lab"], "team"),
    ("Billing Team", ["billing office", "billing clerks"], "team"),
    ("Asset Management", ["asset team"], "team"),
    ("Meter Services", ["meter crew", "meter shop"], "team"),
    ("Control Room", ["ops desk", "night desk"], "team"),
    ("Chief Operator", ["chief op"], "role"),
    ("Compliance Officer", ["regulatory lead"], "role"),
    ("SCADA Engineer", ["controls engineer"], "role"),
    ("Duty Supervisor", ["duty sup", "on-call supervisor"], "role"),
    ("Lab Manager", ["lab lead"], "role"),
    ("SCADA", ["telemetry", "the HMI"], "system"),
    ("Plant Historian", ["historian", "PI server"], "system"),
    ("Maximo", ["CMMS", "work order system"], "system"),
    ("Legacy Work Order Database", ["old WO database", "Access database"], "system"),
    ("CIS", ["customer information system"], "system"),
    ("Legacy Billing Platform", ["green screen", "AS400"], "system"),
    ("LIMS", ["lab information system"], "system"),
    ("Network GIS", ["GIS", "network map"], "system"),
    ("Asset Register", ["asset list"], "document"),
    ("Operating Permit", ["state permit", "permit to operate"], "document"),
    ("Sampling Plan", ["SSP", "sample siting plan"], "document"),
    ("Boil Water Notice", ["BWN", "boil notice"], "document"),
    ("Monthly Operating Report", ["MOR"], "document"),
    ("Main Flushing", ["flushing", "hydrant flushing"], "procedure"),
    ("Bacteriological Sampling", ["bac-T sampling", "coliform sampling"], "procedure"),
    ("Lockout-Tagout", ["LOTO", "lockout"], "procedure"),
    ("Filter Backwash", ["backwash"], "procedure"),
    ("Meter Read Cycle", ["read cycle", "meter reads"], "procedure"),
    ("Bill Run", ["billing run"], "procedure"),
    ("Main Break Response", ["break response", "main break callout"], "procedure"),
    ("Chlorine Residual Check", ["residual check", "Cl2 check"], "procedure"),
    ("Riverside Treatment Plant", ["Riverside", "RTP"], "place"),
    ("North Hill Pump Station", ["North Hill", "PS-4"], "place"),
    ("Clearwell", ["clear well"], "place"),
    ("Hillcrest Reservoir", ["Hillcrest tank"], "place"),
    ("Cobalt Controls", ["Cobalt"], "vendor"),
    ("CL17 Analyzer", ["CL17", "chlorine analyzer"], "product"),
]

# short names for gold, to keep the data readable
DC, TO, WQL, BT, AM, MS, CR = ("Distribution Crew", "Treatment Operations", "Water Quality Lab",
                               "Billing Team", "Asset Management", "Meter Services", "Control Room")
CO, COMP, SE, DS, LM = ("Chief Operator", "Compliance Officer", "SCADA Engineer",
                        "Duty Supervisor", "Lab Manager")
SCADA, PH, MAX, LWO, CIS, LBP, LIMS, GIS = ("SCADA", "Plant Historian", "Maximo",
                                             "Legacy Work Order Database", "CIS",
                                             "Legacy Billing Platform", "LIMS", "Network GIS")
AR, OP, SP, BWN, MOR = ("Asset Register", "Operating Permit", "Sampling Plan",
                        "Boil Water Notice", "Monthly Operating Report")
MF, BS, LOTO, FB, MRC, BR, MBR, CRC = ("Main Flushing", "Bacteriological Sampling", "Lockout-Tagout",
                                      "Filter Backwash", "Meter Read Cycle", "Bill Run",
                                      "Main Break Response", "Chlorine Residual Check")
RTP, NH, CW, HR, COB, CL17 = ("Riverside Treatment Plant", "North Hill Pump Station", "Clearwell",
                              "Hillcrest Reservoir", "Cobalt Controls", "CL17 Analyzer")

# (text, gold, cue or None)
SENTENCES = [
    # ---- plain assertions, no cue ----
    ("The mains crew owns hydrant flushing across the whole network.", [[MF, "owned_by", DC]], None),
    ("Filter Backwash belongs to Treatment Operations.", [[FB, "owned_by", TO]], None),
    ("The WQ lab runs Bacteriological Sampling every weekday morning.", [[BS, "owned_by", WQL]], None),
    ("Each month the read cycle closes first and the billing run goes out the following Tuesday.",
     [[MRC, "precedes", BR]], None),
    ("Maximo replaced the old WO database in 2020.", [[MAX, "supersedes", LWO]], None),
    ("The clear well sits underneath the filter building at RTP.", [[CW, "part_of", RTP]], None),
    ("SCADA polls North Hill every thirty seconds and pages someone on a high-level alarm.",
     [[NH, "monitored_by", SCADA]], None),
    ("Main Break Response needs the network map open on the truck laptop.", [[MBR, "requires", GIS]], None),
    ("The Compliance Officer owns the MOR and sends it to the state by the tenth.",
     [[MOR, "owned_by", COMP]], None),
    ("LIMS is looked after by the Lab Manager.", [[LIMS, "owned_by", LM]], None),
    ("CIS took over from the green screen in March 2018.", [[CIS, "supersedes", LBP]], None),
    ("A residual check only counts if it was taken with a calibrated CL17.", [[CRC, "requires", CL17]], None),
    ("The night desk keeps an eye on Hillcrest Reservoir levels.", [[HR, "monitored_by", CR]], None),
    ("The asset team is the custodian of the Asset Register.", [[AR, "owned_by", AM]], None),
    ("The Sampling Plan is appended to the state permit as Schedule C.", [[SP, "part_of", OP]], None),
    ("After flushing, crews take a residual check at the nearest hydrant.", [[MF, "precedes", CRC]], None),
    ("The Duty Supervisor runs Main Break Response and decides when a valve gets shut.",
     [[MBR, "owned_by", DS]], None),
    ("Meter Services owns the read cycle end to end.", [[MRC, "owned_by", MS]], None),
    ("The Bill Run is the billing office's job.", [[BR, "owned_by", BT]], None),
    ("The SCADA Engineer is responsible for the HMI, alarm setpoints included.", [[SCADA, "owned_by", SE]], None),
    ("Coliform sampling is driven by the SSP: no site list, no samples.", [[BS, "requires", SP]], None),
    ("The Plant Historian is the responsibility of the SCADA Engineer.", [[PH, "owned_by", SE]], None),
    ("Control room operators watch the CL17 readings on the outlet main.", [[CL17, "monitored_by", CR]], None),
    ("The Boil Water Notice template lives with the Compliance Officer, who keeps it current.",
     [[BWN, "owned_by", COMP]], None),
    ("Once the backwash finishes, the operator does a residual check on the filtered water.",
     [[FB, "precedes", CRC]], None),
    ("The Asset Register draws all of its pipe data from Network GIS.", [[AR, "requires", GIS]], None),
    ("Maximo leans on the Asset Register for every asset ID it knows about.", [[MAX, "requires", AR]], None),
    ("The MOR is built from historian data, so it cannot be filed while the historian is down.",
     [[MOR, "requires", PH]], None),
    ("Riverside's treatment train is run by Treatment Operations.", [[RTP, "owned_by", TO]], None),
    ("The chief op owns the plant's LOTO procedure.", [[LOTO, "owned_by", CO]], None),
    ("Billing clerks own CIS day to day; IT only patches the server.", [[CIS, "owned_by", BT]], None),
    ("Bacteriological Sampling depends on LIMS to print the chain-of-custody labels.",
     [[BS, "requires", LIMS]], None),
    ("Hillcrest Reservoir belongs to the distribution network, and the Distribution Crew maintains it.",
     [[HR, "owned_by", DC]], None),
    ("The MOR goes out after the month's results are in from Bacteriological Sampling.",
     [[BS, "precedes", MOR]], None),
    ("Maximo holds the isolation lists for each pump, so Lockout-Tagout can't be done without it.",
     [[LOTO, "requires", MAX]], None),
    ("PS-4 alarms land on the ops desk.", [[NH, "monitored_by", CR]], None),
    ("The WQ lab is the owner of the Sampling Plan.", [[SP, "owned_by", WQL]], None),
    ("Cobalt Controls watches our SCADA remotely under the support contract.",
     [[SCADA, "monitored_by", COB]], None),
    ("The Meter Read Cycle wraps up a couple of days ahead of the Bill Run.",
     [[MRC, "precedes", BR]], None),
    ("Treatment ops look after the Clearwell and its level control.", [[CW, "owned_by", TO]], None),
    ("The Plant Historian is a component of SCADA and runs on the same server pair.",
     [[PH, "part_of", SCADA]], None),
    ("Lockout-Tagout is a step inside Main Break Response, done before anyone touches a valve.",
     [[LOTO, "part_of", MBR]], None),
    ("North Hill Pump Station fills Hillcrest Reservoir overnight.", [], None),
    ("North Hill and Hillcrest Reservoir are both in the high pressure zone.", [], None),
    ("The Lab Manager reads through every LIMS result before it is released.", [], None),

    # ---- relative clauses ----
    ("The Sampling Plan, which belongs to the lab, lists 42 taps across the network.",
     [[SP, "owned_by", WQL]], "relative_clause"),
    ("Maximo, which replaced the Access database, now issues every work order.",
     [[MAX, "supersedes", LWO]], "relative_clause"),
    ("The CL17 that plant operators calibrate every Monday is what the Chlorine Residual Check depends on.",
     [[CRC, "requires", CL17]], "relative_clause"),
    ("Hillcrest Reservoir, which the night desk watches, lost level twice last week.",
     [[HR, "monitored_by", CR]], "relative_clause"),
    ("The duty sup, who also owns Main Break Response, approves overtime for the mains crew.",
     [[MBR, "owned_by", DS]], "relative_clause"),
    ("LOTO, which the Chief Operator owns, applies to every pump at North Hill.",
     [[LOTO, "owned_by", CO]], "relative_clause"),
    ("Staff who run Filter Backwash have to finish LOTO training in their first week.",
     [], "relative_clause"),
    ("The clear well, which is part of RTP, was drained for inspection in May.",
     [[CW, "part_of", RTP]], "relative_clause"),
    ("CIS, which the billing clerks own, pulls reads from the handhelds every night.",
     [[CIS, "owned_by", BT]], "relative_clause"),
    ("The network map that the asset team maintains is what crews open during a main break callout.",
     [[GIS, "owned_by", AM]], "relative_clause"),
    ("PS-4, whose pumps Cobalt rewired last year, is polled by SCADA.",
     [[NH, "monitored_by", SCADA]], "relative_clause"),
    ("The Asset Register, which Maximo relies on for asset IDs, is exported nightly.",
     [[MAX, "requires", AR]], "relative_clause"),
    ("Bacteriological Sampling, which comes before the MOR each month, is run by the WQ lab.",
     [[BS, "precedes", MOR], [BS, "owned_by", WQL]], "relative_clause"),

    # ---- wrong pair: a third entry sits between or next to the two ----
    ("Main Flushing, unlike Filter Backwash, is owned by the Distribution Crew.",
     [[MF, "owned_by", DC]], "wrong_pair"),
    ("The Lab Manager signs off LIMS changes; the historian, by contrast, belongs to the SCADA Engineer.",
     [[PH, "owned_by", SE]], "wrong_pair"),
    ("The Bill Run needs the meter reads loaded into CIS first.", [[BR, "requires", MRC]], "wrong_pair"),
    ("Treatment Operations hands Riverside's Monthly Operating Report to the Compliance Officer, who owns it.",
     [[MOR, "owned_by", COMP]], "wrong_pair"),
    ("SCADA, not the Plant Historian, watches Hillcrest Reservoir.", [[HR, "monitored_by", SCADA]], "wrong_pair"),
    ("Coliform sampling at North Hill is owned by the lab.", [[BS, "owned_by", WQL]], "wrong_pair"),
    ("The asset team owns the Asset Register that Maximo reads from.",
     [[AR, "owned_by", AM], [MAX, "requires", AR]], "wrong_pair"),
    ("Backwash at RTP is followed by a residual check, not by bac-T sampling.",
     [[FB, "precedes", CRC]], "wrong_pair"),
    ("The Duty Supervisor may get paged about PS-4, but the station itself belongs to the Distribution Crew.",
     [[NH, "owned_by", DC]], "wrong_pair"),
    ("LOTO is owned by the Chief Operator and applied by the Distribution Crew at every valve.",
     [[LOTO, "owned_by", CO]], "wrong_pair"),
    ("GIS feeds the Asset Register, which in turn feeds Maximo.",
     [[AR, "requires", GIS], [MAX, "requires", AR]], "wrong_pair"),
    ("Hydrant flushing belongs to the mains crew, while Hillcrest Reservoir is polled by SCADA.",
     [[MF, "owned_by", DC], [HR, "monitored_by", SCADA]], "wrong_pair"),

    # ---- coordination ----
    ("The Distribution Crew owns Main Flushing and North Hill Pump Station.",
     [[MF, "owned_by", DC], [NH, "owned_by", DC]], "coordination"),
    ("SCADA watches North Hill and Hillcrest Reservoir.",
     [[NH, "monitored_by", SCADA], [HR, "monitored_by", SCADA]], "coordination"),
    ("Filter Backwash and the Chlorine Residual Check are both owned by Treatment Operations.",
     [[FB, "owned_by", TO], [CRC, "owned_by", TO]], "coordination"),
    ("CIS and Maximo replaced the green screen and the Access database respectively.",
     [[CIS, "supersedes", LBP], [MAX, "supersedes", LWO]], "coordination"),
    ("The Bill Run requires CIS and a closed read cycle.",
     [[BR, "requires", CIS], [BR, "requires", MRC]], "coordination"),
    ("The Compliance Officer owns the state permit and the Boil Water Notice.",
     [[OP, "owned_by", COMP], [BWN, "owned_by", COMP]], "coordination"),
    ("The WQ lab owns Bacteriological Sampling and the Sampling Plan, but not the CL17 Analyzer.",
     [[BS, "owned_by", WQL], [SP, "owned_by", WQL]], "coordination"),
    ("Maximo and the Plant Historian both depend on the Asset Register.",
     [[MAX, "requires", AR], [PH, "requires", AR]], "coordination"),
    ("Flushing and backwash are each followed by a residual check.",
     [[MF, "precedes", CRC], [FB, "precedes", CRC]], "coordination"),
    ("Control room operators and the Duty Supervisor both keep an eye on PS-4.",
     [[NH, "monitored_by", CR], [NH, "monitored_by", DS]], "coordination"),
    ("The Billing Team and Meter Services sit in the same depot office, next to the Bill Run printer.", [],
     "coordination"),

    ("The state permit includes the Sampling Plan and the Boil Water Notice template as schedules.",
     [[SP, "part_of", OP], [BWN, "part_of", OP]], "coordination"),

    # ---- lists ----
    ("Treatment Operations owns Filter Backwash, the Chlorine Residual Check and the Clearwell.",
     [[FB, "owned_by", TO], [CRC, "owned_by", TO], [CW, "owned_by", TO]], "list"),
    ("The order at the plant each morning is backwash, residual check, then coliform sampling.",
     [[FB, "precedes", CRC], [CRC, "precedes", BS]], "list"),
    ("SCADA watches PS-4, Hillcrest Reservoir and the Clearwell.",
     [[NH, "monitored_by", SCADA], [HR, "monitored_by", SCADA], [CW, "monitored_by", SCADA]], "list"),
    ("Main Break Response needs LOTO, the network map, and a Maximo work order.",
     [[MBR, "requires", LOTO], [MBR, "requires", GIS], [MBR, "requires", MAX]], "list"),
    ("The state permit covers Riverside, North Hill and Hillcrest Reservoir.", [], "list"),
    ("The SCADA Engineer looks after SCADA, the Plant Historian, and the Cobalt Controls support contract.",
     [[SCADA, "owned_by", SE], [PH, "owned_by", SE]], "list"),
    ("Riverside Treatment Plant includes the Clearwell, the filter gallery and the chemical store.",
     [[CW, "part_of", RTP]], "list"),
    ("Maximo, CIS, LIMS and the GIS all run on the same VM cluster.", [], "list"),

    # ---- passives ----
    ("Network GIS is maintained by the asset team.", [[GIS, "owned_by", AM]], "passive"),
    ("Hillcrest Reservoir is watched around the clock by the Control Room.", [[HR, "monitored_by", CR]], "passive"),
    ("The green screen was replaced by CIS in 2018.", [[CIS, "supersedes", LBP]], "passive"),
    ("The Operating Permit is held by the Compliance Officer.", [[OP, "owned_by", COMP]], "passive"),
    ("The Bill Run is preceded by the read cycle.", [[MRC, "precedes", BR]], "passive"),
    ("The Clearwell is contained within Riverside Treatment Plant.", [[CW, "part_of", RTP]], "passive"),
    ("The Access database was superseded by Maximo.", [[MAX, "supersedes", LWO]], "passive"),
    ("The MOR is compiled from figures held in the Plant Historian.", [[MOR, "requires", PH]], "passive"),

    # ---- long distance ----
    ("Main Flushing, which the mains crew schedules around school holidays and which causes most of our "
     "discoloured-water complaints in spring, is followed by a residual check at the last hydrant.",
     [[MF, "precedes", CRC]], "distant"),
    ("The Legacy Billing Platform - the AS400 box in the basement that nobody dares switch off - "
     "has been superseded by CIS.", [[CIS, "supersedes", LBP]], "distant"),
    ("North Hill Pump Station, built in 1974, upgraded twice and still running on its original wet well, "
     "is monitored by SCADA.", [[NH, "monitored_by", SCADA]], "distant"),
    ("Lockout-Tagout, in the version rewritten after the 2023 incident and re-trained to every crew "
     "last spring, is owned by the Chief Operator.", [[LOTO, "owned_by", CO]], "distant"),

    # ---- traps: relation word in another sense, hedges, questions, one-off events ----
    ("Main Flushing requires patience, as anyone on the Distribution Crew will tell you.", [], "trap"),
    ("The Duty Supervisor owns up to every missed callout in the Main Break Response review.", [], "trap"),
    ("The Bill Run follows the CIS rate table exactly.", [], "trap"),
    ("Bacteriological Sampling follows the Sampling Plan to the letter.", [], "trap"),
    ("The CL17 Analyzer is part of the reason the Chlorine Residual Check takes so long.", [], "trap"),
    ("Maximo replaced two spreadsheets the asset team used to keep.", [], "trap"),
    ("Is the Sampling Plan part of the Operating Permit or a separate document?", [], "trap"),
    ("Who owns the Network GIS now that the asset team has been reorganised?", [], "trap"),
    ("The Plant Historian probably depends on SCADA for its clock.", [], "trap"),
    ("We think the Clearwell is monitored by the night desk, but nobody has checked.", [], "trap"),
    ("The SCADA Engineer might own the Plant Historian; the org chart is unclear.", [], "trap"),
    ("North Hill Pump Station runs before dawn to top up Hillcrest Reservoir.", [], "trap"),
    ("The Billing Team monitors its shared inbox for Meter Read Cycle complaints.", [], "trap"),
    ("LOTO supersedes any verbal instruction from the Duty Supervisor.", [], "trap"),
    ("The Compliance Officer keeps an eye on the weather before the Main Flushing season opens.", [], "trap"),
    ("Treatment Operations owns the kettle in the Riverside break room.", [], "trap"),
    ("The lab needs a new fridge before the summer Bacteriological Sampling peak.", [], "trap"),
    ("SCADA went down right after the Filter Backwash on Tuesday.", [], "trap"),
    ("Did the residual check happen before or after the flushing on Elm Street?", [], "trap"),
    ("Is LIMS still owned by the Lab Manager?", [], "trap"),
    ("Every CL17 Analyzer we own was bought from Cobalt Controls.", [], "trap"),
    ("Rumour has it that Meter Services owns the Bill Run now.", [], "trap"),
    ("The contractor claimed Cobalt Controls monitors PS-4, but the contract says otherwise.", [], "trap"),
    ("According to the chief op, the dist crew owns LOTO now, though nobody has told the crews.", [], "trap"),
    ("North Hill Pump Station is part of the Riverside supply system rather than the gravity zone.", [],
     "trap"),

    # ---- negation ----
    ("The Control Room does not own North Hill Pump Station.", [], "negation"),
    ("Filter Backwash does not need LOTO, because nobody climbs into the filter.", [], "negation"),
    ("Bac-T sampling is not part of Main Flushing.", [], "negation"),
    ("North Hill Pump Station belongs to the Distribution Crew, not Treatment Operations.",
     [[NH, "owned_by", DC]], "negation"),
    ("No crew starts Main Break Response at a valve until LOTO is in place.",
     [[MBR, "requires", LOTO]], "negation"),
    ("Coliform sampling can't go ahead without the Sampling Plan.", [[BS, "requires", SP]], "negation"),
    ("The Plant Historian isn't watched by the Control Room; nobody gets its alarms.", [], "negation"),
    ("Neither the billing clerks nor Meter Services own the Asset Register.", [], "negation"),
    ("Hillcrest Reservoir is not part of Riverside Treatment Plant, even though they share a fence.",
     [], "negation"),
    ("CIS has never replaced the green screen for the old trade-waste accounts.", [], "negation"),

    # ---- conditional ----
    ("If the CL17 Analyzer is offline, the Chlorine Residual Check would need the Lab Manager to approve "
     "a manual reading.", [], "conditional"),
    ("If SCADA loses comms, the Control Room would have to watch PS-4 by phone.", [], "conditional"),
    ("When a break drops a zone below 20 psi, Main Break Response requires a Boil Water Notice.",
     [], "conditional"),
    ("Should Maximo be down, the mains crew could raise work orders in the old WO database.", [],
     "conditional"),
    ("Bacteriological Sampling would only precede the MOR if the lab finished on time.", [], "conditional"),
    ("In a drought year, the Compliance Officer may take over Main Flushing.", [], "conditional"),
    ("Unless the Asset Register is exported first, Maximo would show stale asset IDs.", [], "conditional"),
    ("If North Hill trips, Hillcrest Reservoir is watched by the Duty Supervisor until the pumps restart.",
     [], "conditional"),
    ("Where the state permit and the Sampling Plan disagree, the Operating Permit supersedes the plan.",
     [], "conditional"),

    # ---- history ----
    ("The Bill Run used to depend on the green screen.", [], "history"),
    ("Until 2019, Main Flushing belonged to Treatment Operations.", [], "history"),
    ("The old WO database was once owned by the asset team.", [], "history"),
    ("The Duty Supervisor no longer watches the Clearwell overnight.", [], "history"),
    ("Back in the 1990s the clear well was part of the old Riverside works.", [], "history"),
    ("Treatment Operations owned LIMS until the 2022 restructure.", [], "history"),
    ("Before the rebuild, the MOR needed the old WO database.", [], "history"),
    ("The chief op used to keep an eye on Hillcrest Reservoir from home, but that stopped in 2021.", [],
     "history"),

    # ---- plan ----
    ("CIS will replace the green screen for trade-waste accounts next year.", [], "plan"),
    ("The asset team is planning to take over the Network GIS from IT.", [], "plan"),
    ("We intend to have the Control Room watch the Clearwell from Q3.", [], "plan"),
    ("Lockout-Tagout is going to require the Network GIS valve layer from April.", [], "plan"),
    ("Next budget cycle, Meter Services is supposed to take the Bill Run off the Billing Team.", [], "plan"),
    ("Ideally the Sampling Plan would become part of the Operating Permit at renewal.", [], "plan"),
    ("The proposal is that Main Flushing should come before Bacteriological Sampling in the spring programme.",
     [], "plan"),
]

ALLOWED_CUES = {"relative_clause", "wrong_pair", "coordination", "list", "passive", "distant",
                "trap", "negation", "conditional", "history", "plan"}
KINDS = {"team", "role", "system", "document", "procedure", "place", "product", "vendor"}


def names_in(text, entries):
    """Titles of entries named in text by title or alias, whole words, case-insensitive."""
    found = set()
    for title, aliases, _ in entries:
        for name in [title] + aliases:
            if re.search(r"(?<!\w)" + re.escape(name) + r"(?!\w)", text, re.IGNORECASE):
                found.add(title)
                break
    return found


def check():
    errors = []
    titles = [e[0] for e in ENTRIES]
    if len(set(titles)) != len(titles):
        errors.append("duplicate titles")
    all_names = Counter(n.lower() for e in ENTRIES for n in [e[0]] + e[1])
    for n, c in all_names.items():
        if c > 1:
            errors.append("name used twice: %r" % n)
    for t, a, k in ENTRIES:
        if k not in KINDS:
            errors.append("bad kind %r for %r" % (k, t))
    rels = {r["name"] for r in RELATIONS}
    if len(rels) != 6:
        errors.append("need 6 relations")
    seen = set()
    for text, gold, cue in SENTENCES:
        key = text.strip().lower()
        if key in seen:
            errors.append("duplicate sentence: %s" % text)
        seen.add(key)
        if cue is not None and cue not in ALLOWED_CUES:
            errors.append("bad cue %r: %s" % (cue, text))
        named = names_in(text, ENTRIES)
        if len(named) < 2:
            errors.append("names < 2 entries (%s): %s" % (sorted(named), text))
        triples = set()
        for tr in gold:
            if len(tr) != 3:
                errors.append("bad triple %r" % (tr,))
                continue
            f, r, t = tr
            if f not in titles:
                errors.append("unknown title %r" % f)
            if t not in titles:
                errors.append("unknown title %r" % t)
            if r not in rels:
                errors.append("unknown relation %r" % r)
            if f == t:
                errors.append("self-loop %r" % (tr,))
            if f not in named or t not in named:
                errors.append("triple end not in sentence %r: %s" % (tr, text))
            if tuple(tr) in triples:
                errors.append("duplicate triple in sentence: %s" % text)
            triples.add(tuple(tr))
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
        s = {"text": text, "gold": gold}
        if cue is not None:
            s["cue"] = cue
        out["sentences"].append(s)
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "extraction_set3.json")
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(out, fh, indent=1, ensure_ascii=False)
        fh.write("\n")
    # summary
    n = len(SENTENCES)
    with_gold = sum(1 for s in SENTENCES if s[1])
    print("entries:", len(ENTRIES), "sentences:", n, "with gold:", with_gold, "empty:", n - with_gold)
    rc = Counter(tr[1] for s in SENTENCES for tr in s[1])
    print("triples:", sum(rc.values()), dict(rc.most_common()))
    cues = Counter()
    for text, gold, cue in SENTENCES:
        c = cue or "(none)"
        cues[(c, bool(gold))] += 1
    for c in ["(none)"] + sorted(ALLOWED_CUES):
        print("| %s | %d | %d | %d |" % (c, cues[(c, True)] + cues[(c, False)], cues[(c, True)], cues[(c, False)]))
    print("wrote", path)


if __name__ == "__main__":
    main()
