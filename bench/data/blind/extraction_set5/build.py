#!/usr/bin/env python3
"""Blind extraction set 5: a city hotel's operations ("The Calloway Hotel").

All sentences, entries, aliases and gold triples below were written by hand.
This script only checks them and writes extraction_set5.json next to itself.
"""
import json
import os
import re
import sys
from collections import Counter

DOMAIN = "city_hotel_operations"
NOTE = ("The Calloway Hotel, a made-up 212-room city hotel. Hand-written blind set; gold holds only "
        "what a sentence states as currently true, in canonical direction, with entry titles. "
        "Negation, conditionals, plans, history, hedges, questions and doubtful reported speech get []. "
        "Chains are not closed transitively. Relation words used in another sense get no gold.")

RELATIONS = [
    {"name": "requires", "inverse": "required_by",
     "description": "The first entry cannot be done or cannot work without the second entry.",
     "phrases": ["requires", "needs", "depends on", "relies on", "cannot run without"],
     "inverse_phrases": ["is required by", "is needed by", "is needed for", "is a prerequisite for"]},
    {"name": "owned_by", "inverse": "owns",
     "description": "The second entry (a team, role or vendor) is accountable for the first entry.",
     "phrases": ["is owned by", "is the responsibility of", "is managed by", "sits with"],
     "inverse_phrases": ["owns", "is responsible for", "manages", "looks after"]},
    {"name": "precedes", "inverse": "follows",
     "description": "The first procedure happens before the second in the normal sequence.",
     "phrases": ["precedes", "comes before", "happens before", "is followed by"],
     "inverse_phrases": ["follows", "comes after", "happens after", "is preceded by"]},
    {"name": "part_of", "inverse": "has_part",
     "description": "The first entry is a component, member, module or area of the second.",
     "phrases": ["is part of", "is a module of", "is included in", "lies within"],
     "inverse_phrases": ["includes", "contains", "consists of", "has"]},
    {"name": "supersedes", "inverse": "superseded_by",
     "description": "The first entry replaced the second, which is retired or legacy.",
     "phrases": ["supersedes", "replaces", "replaced", "took over from"],
     "inverse_phrases": ["is superseded by", "was replaced by", "was superseded by"]},
    {"name": "escalates_to", "inverse": "receives_escalations_from",
     "description": ("Problems from the first entry (a team, role, procedure or vendor) that it cannot "
                     "resolve itself go to the second entry (a role, team or vendor)."),
     "phrases": ["escalates to", "is escalated to", "goes up to", "is referred to"],
     "inverse_phrases": ["receives escalations from", "handles escalations from", "is the escalation point for"]},
]

ENTRIES = [
    # teams
    ("Front Desk", ["Reception", "Front Office"], "team"),
    ("Housekeeping", ["HK"], "team"),
    ("Engineering", ["Maintenance", "engineers"], "team"),
    ("Food and Beverage", ["F&B"], "team"),
    ("Revenue Management", ["revenue team"], "team"),
    # roles
    ("Duty Manager", ["MOD", "Manager on Duty"], "role"),
    ("Front Office Manager", ["FOM"], "role"),
    ("Executive Housekeeper", ["EHK", "exec housekeeper"], "role"),
    ("Chief Engineer", ["CE"], "role"),
    ("Revenue Manager", ["RM"], "role"),
    ("Night Auditor", ["auditor"], "role"),
    ("Fire Safety Officer", ["FSO"], "role"),
    ("General Manager", ["GM"], "role"),
    # systems
    ("Property Management System", ["PMS", "Halcyon"], "system"),
    ("Innkeeper 4", ["Innkeeper", "old PMS"], "system"),
    ("Channel Manager", ["RateBridge"], "system"),
    ("Booking Engine", ["IBE"], "system"),
    ("Key Card System", ["key encoder", "KeyLok"], "system"),
    ("Fire Alarm Panel", ["alarm panel"], "system"),
    ("FixLog", ["work order system"], "system"),
    # documents
    ("Maintenance Logbook", ["red book"], "document"),
    ("Guest Complaint Log", ["complaint log"], "document"),
    ("Night Audit Report", ["audit pack"], "document"),
    ("Fire Risk Assessment", ["FRA"], "document"),
    ("Shift Handover Note", ["handover note"], "document"),
    # procedures
    ("Night Audit", ["end of day", "EOD"], "procedure"),
    ("Guest Complaint Handling", ["complaint handling", "service recovery"], "procedure"),
    ("Fire Drill", ["evacuation drill"], "procedure"),
    ("Weekly Alarm Test", ["bell test", "alarm test"], "procedure"),
    ("Room Inspection", ["room check"], "procedure"),
    ("Check-In", ["check in"], "procedure"),
    ("Check-Out", ["check out"], "procedure"),
    ("Linen Exchange", ["linen swap"], "procedure"),
    ("Rate Loading", ["rate load"], "procedure"),
    # places
    ("Plant Room", ["boiler room"], "place"),
    ("Loading Bay", ["back dock"], "place"),
    ("Back of House", ["BOH"], "place"),
    # vendors
    ("Brightwater Laundry", ["Brightwater", "laundry contractor"], "vendor"),
    ("Sentinel Fire Services", ["Sentinel"], "vendor"),
    # product
    ("Late Checkout", ["LCO"], "product"),
]

# short names for gold triples (expanded to titles below)
A = {
    "FD": "Front Desk", "HK": "Housekeeping", "ENG": "Engineering", "FB": "Food and Beverage",
    "REVT": "Revenue Management", "DM": "Duty Manager", "FOM": "Front Office Manager",
    "EHK": "Executive Housekeeper", "CE": "Chief Engineer", "RM": "Revenue Manager",
    "NAR_ROLE": "Night Auditor", "FSO": "Fire Safety Officer", "GM": "General Manager",
    "PMS": "Property Management System", "INN": "Innkeeper 4", "CM": "Channel Manager",
    "IBE": "Booking Engine", "KCS": "Key Card System", "FAP": "Fire Alarm Panel", "FIX": "FixLog",
    "RED": "Maintenance Logbook", "GCL": "Guest Complaint Log", "NAREP": "Night Audit Report",
    "FRA": "Fire Risk Assessment", "SHN": "Shift Handover Note", "NA": "Night Audit",
    "GCH": "Guest Complaint Handling", "DRILL": "Fire Drill", "WAT": "Weekly Alarm Test",
    "RI": "Room Inspection", "CI": "Check-In", "CO": "Check-Out", "LE": "Linen Exchange",
    "RL": "Rate Loading", "PR": "Plant Room", "LB": "Loading Bay", "BOH": "Back of House",
    "BW": "Brightwater Laundry", "SEN": "Sentinel Fire Services", "LCO": "Late Checkout",
}

R, O, P, PT, S, E = "requires", "owned_by", "precedes", "part_of", "supersedes", "escalates_to"

# (text, [(from, relation, to), ...], cue or None)
SENTENCES = [
    # ---------------- plain, no cue ----------------
    ("Night Audit requires the PMS to be in single-user mode from 02:00.", [("NA", R, "PMS")], None),
    ("The Front Office Manager owns the Shift Handover Note.", [("SHN", O, "FOM")], None),
    ("Rate Loading sits with the revenue team; nobody else touches the rates.", [("RL", O, "REVT")], None),
    ("Room Inspection always comes before Check-In, so the desk never hands out a dirty room.", [("RI", P, "CI")], None),
    ("Halcyon replaced Innkeeper 4 in March 2024.", [("PMS", S, "INN")], None),
    ("Anything in Guest Complaint Handling that the desk cannot settle escalates to the MOD.", [("GCH", E, "DM")], None),
    ("RateBridge depends on the PMS for live availability.", [("CM", R, "PMS")], None),
    ("The IBE pulls every rate and every room count from RateBridge and can't sell a thing without it.", [("IBE", R, "CM")], None),
    ("The Fire Drill is the responsibility of the Fire Safety Officer.", [("DRILL", O, "FSO")], None),
    ("Check-In needs a working key encoder. No keys, no arrivals.", [("CI", R, "KCS")], None),
    ("The Executive Housekeeper is responsible for Room Inspection.", [("RI", O, "EHK")], None),
    ("FixLog supersedes the red book for all maintenance requests.", [("FIX", S, "RED")], None),
    ("The Night Auditor escalates any folio that won't balance to the Front Office Manager.", [("NAR_ROLE", E, "FOM")], None),
    ("The Chief Engineer looks after the Plant Room.", [("PR", O, "CE")], None),
    ("Check-Out is followed by a strip-and-clean and then by Room Inspection.", [("CO", P, "RI")], None),
    ("The Plant Room is part of Back of House and guests are never allowed in.", [("PR", PT, "BOH")], None),
    ("The Revenue Manager sits in Revenue Management, not in Sales.", [("RM", PT, "REVT")], None),
    ("The Weekly Alarm Test relies on the Fire Alarm Panel being clear of faults.", [("WAT", R, "FAP")], None),
    ("The Night Audit Report is managed by the Front Office Manager.", [("NAREP", O, "FOM")], None),
    ("Housekeeping escalates linen shortages to the Executive Housekeeper.", [("HK", E, "EHK")], None),
    ("Late Checkout can't be granted without a flag in Halcyon.", [("LCO", R, "PMS")], None),
    ("Engineering includes the Chief Engineer and four shift technicians.", [("CE", PT, "ENG")], None),
    ("Brightwater Laundry escalates missed collections to the Executive Housekeeper.", [("BW", E, "EHK")], None),
    ("The FRA is owned by the GM, who re-signs it every January.", [("FRA", O, "GM")], None),
    ("Night Audit comes before Rate Loading: the new day's rates only go in once EOD has rolled the date.", [("NA", P, "RL")], None),
    ("The key encoder is a module of Halcyon rather than a separate product.", [("KCS", PT, "PMS")], None),
    ("The Duty Manager escalates to the General Manager; at night there is nobody else above the MOD.", [("DM", E, "GM")], None),
    ("Service recovery relies on the complaint log being filled in during the same shift.", [("GCH", R, "GCL")], None),
    ("The Loading Bay lies within Back of House, behind the kitchen.", [("LB", PT, "BOH")], None),
    ("Engineering owns FixLog.", [("FIX", O, "ENG")], None),
    ("Front Desk owns Check-In from the first hello to the key handover.", [("CI", O, "FD")], None),
    ("The evacuation drill needs the alarm panel, obviously.", [("DRILL", R, "FAP")], None),
    ("Linen Exchange uses the back dock, because Brightwater's van won't fit anywhere else.", [("LE", R, "LB")], None),
    ("Rate Loading can't start until RateBridge is connected.", [("RL", R, "CM")], None),
    ("F&B refers room-service complaints up to the Duty Manager.", [("FB", E, "DM")], None),
    ("The Guest Complaint Log is kept by the Front Office Manager and nobody else edits it.", [("GCL", O, "FOM")], None),
    ("The bell test always happens the morning before a Fire Drill.", [("WAT", P, "DRILL")], None),
    ("The Night Auditor is a member of Front Desk, even though the day team rarely sees them.", [("NAR_ROLE", PT, "FD")], None),
    ("Halcyon has been the system of record ever since it superseded the old PMS.", [("PMS", S, "INN")], None),
    ("On our side Housekeeping owns Linen Exchange; Brightwater only drives the van.", [("LE", O, "HK")], None),
    ("The Channel Manager is the Revenue Manager's baby: she owns it, she fixes it.", [("CM", O, "RM")], None),
    ("Every morning the complaint log is included in the handover note.", [("GCL", PT, "SHN")], None),
    ("Maintenance escalates anything structural to the Chief Engineer.", [("ENG", E, "CE")], None),
    ("The FRA lists the Weekly Alarm Test among its control measures.", [("WAT", PT, "FRA")], None),
    ("Check-In: depends on Halcyon. Always has.", [("CI", R, "PMS")], None),
    ("Sentinel Fire Services took over from the in-house team on the alarm panel, and the FSO now escalates panel faults to Sentinel.", [("FSO", E, "SEN")], None),
    ("The audit pack goes up to the GM when it shows a variance over £200.", [], "conditional"),
    ("Guest Complaint Handling is owned by the Front Office Manager during the day.", [("GCH", O, "FOM")], None),

    # ---------------- relative clauses ----------------
    ("The Fire Alarm Panel, which the FSO owns, is mounted behind the Front Desk.", [("FAP", O, "FSO")], "relative_clause"),
    ("Rate Loading, which depends on RateBridge, has to be finished before 10:00.", [("RL", R, "CM")], "relative_clause"),
    ("The auditor who covers Night Audit on weekends is shared with Front Desk cover.", [], "relative_clause"),
    ("Innkeeper 4, which Halcyon replaced, is still kept read-only for old folios.", [("PMS", S, "INN")], "relative_clause"),
    ("The Shift Handover Note that the FOM owns includes the complaint log.", [("SHN", O, "FOM"), ("GCL", PT, "SHN")], "relative_clause"),
    ("The Loading Bay, where Brightwater collects the soiled linen, is owned by Engineering.", [("LB", O, "ENG")], "relative_clause"),
    ("The Night Audit Report, which the auditor prints at 04:00, is part of the handover note.", [("NAREP", PT, "SHN")], "relative_clause"),
    ("Check-In, which needs the key encoder, is owned by the Front Desk.", [("CI", R, "KCS"), ("CI", O, "FD")], "relative_clause"),
    ("FixLog, which the engineers own, replaced the red book.", [("FIX", O, "ENG"), ("FIX", S, "RED")], "relative_clause"),
    ("The Revenue Manager, who owns RateBridge, also checks the IBE every morning.", [("CM", O, "RM")], "relative_clause"),
    ("The Chief Engineer, to whom Maintenance escalates, looks after the Plant Room as well.", [("ENG", E, "CE"), ("PR", O, "CE")], "relative_clause"),
    ("Guest Complaint Handling, which the MOD owns at night, requires the complaint log.", [("GCH", O, "DM"), ("GCH", R, "GCL")], "relative_clause"),
    ("Weekly Alarm Test results go into FixLog, which is the system Engineering depends on most.", [("ENG", R, "FIX")], "relative_clause"),

    # ---------------- wrong pair (a third entry sits between) ----------------
    ("The alarm panel is serviced by Sentinel, but the FSO owns it.", [("FAP", O, "FSO")], "wrong_pair"),
    ("Night Audit, run by the auditor on Halcyon, is owned by the FOM.", [("NA", O, "FOM")], "wrong_pair"),
    ("Linen Exchange, unlike Room Inspection, requires the Loading Bay.", [("LE", R, "LB")], "wrong_pair"),
    ("The Front Office Manager signs the audit pack that the Night Auditor produces, and owns the Guest Complaint Log.", [("GCL", O, "FOM")], "wrong_pair"),
    ("The IBE talks to RateBridge, and RateBridge requires the PMS.", [("CM", R, "PMS")], "wrong_pair"),
    ("Housekeeping hands the room back to Reception after Room Inspection, which the EHK owns.", [("RI", O, "EHK")], "wrong_pair"),
    ("Although F&B keeps its beer kegs right next to it, the Plant Room is owned by the Chief Engineer.", [("PR", O, "CE")], "wrong_pair"),
    ("The Duty Manager reads the Night Audit Report, which is owned by the FOM.", [("NAREP", O, "FOM")], "wrong_pair"),
    ("Front Desk staff log faults in FixLog, which Engineering owns.", [("FIX", O, "ENG")], "wrong_pair"),
    ("The GM gets the pickup figures from the Revenue Manager, who owns the Channel Manager.", [("CM", O, "RM")], "wrong_pair"),
    ("Reception uses the key encoder at Check-In, but the encoder itself is part of the PMS.", [("KCS", PT, "PMS")], "wrong_pair"),
    ("Housekeeping bags the sheets, Brightwater drives them away, and the Linen Exchange as a whole escalates to the Executive Housekeeper.", [("LE", E, "EHK")], "wrong_pair"),
    ("The FSO wrote the Fire Risk Assessment, but the GM owns it.", [("FRA", O, "GM")], "wrong_pair"),

    # ---------------- coordination ----------------
    ("Room Inspection follows Check-Out and precedes Check-In.", [("CO", P, "RI"), ("RI", P, "CI")], "coordination"),
    ("Both the Fire Drill and the Weekly Alarm Test need the alarm panel.", [("DRILL", R, "FAP"), ("WAT", R, "FAP")], "coordination"),
    ("The Plant Room and the Loading Bay are both part of Back of House.", [("PR", PT, "BOH"), ("LB", PT, "BOH")], "coordination"),
    ("Housekeeping and F&B both escalate to the Duty Manager after 22:00.", [("HK", E, "DM"), ("FB", E, "DM")], "coordination"),
    ("The FOM owns the handover note and the complaint log.", [("SHN", O, "FOM"), ("GCL", O, "FOM")], "coordination"),
    ("Check-In and Late Checkout both rely on Halcyon.", [("CI", R, "PMS"), ("LCO", R, "PMS")], "coordination"),
    ("Engineering owns FixLog, and the FSO the Fire Drill.", [("FIX", O, "ENG"), ("DRILL", O, "FSO")], "coordination"),
    ("The revenue team owns Rate Loading but not the Booking Engine.", [("RL", O, "REVT")], "coordination"),
    ("Halcyon and the new payroll tool replaced Innkeeper 4 and the old clocking-in machine respectively.", [("PMS", S, "INN")], "coordination"),
    ("The EHK and the Chief Engineer belong to Housekeeping and Engineering respectively.", [("EHK", PT, "HK"), ("CE", PT, "ENG")], "coordination"),
    ("The GM and the FSO walked the Loading Bay and the Plant Room together on Tuesday.", [], "coordination"),

    # ---------------- lists / bullet fragments ----------------
    ("Night Audit needs three things: Halcyon in single-user mode, a closed bar till, and the Night Auditor at the desk.", [("NA", R, "PMS"), ("NA", R, "NAR_ROLE")], "list"),
    ("Owned by the FSO: Fire Drill, Weekly Alarm Test, Fire Alarm Panel.", [("DRILL", O, "FSO"), ("WAT", O, "FSO"), ("FAP", O, "FSO")], "list"),
    ("Back of House includes the Plant Room, the Loading Bay and the staff canteen.", [("PR", PT, "BOH"), ("LB", PT, "BOH")], "list"),
    ("Turnover sequence: Check-Out, Linen Exchange, Room Inspection, Check-In.", [("CO", P, "LE"), ("LE", P, "RI"), ("RI", P, "CI")], "list"),
    ("Escalate to the MOD: service recovery, F&B incidents, lost key cards, noise after midnight.", [("GCH", E, "DM"), ("FB", E, "DM")], "list"),
    ("Revenue Management owns: RateBridge, Rate Loading, the IBE.", [("CM", O, "REVT"), ("RL", O, "REVT"), ("IBE", O, "REVT")], "list"),
    ("The handover note contains the complaint log, the audit pack and a printout of open FixLog tickets.", [("GCL", PT, "SHN"), ("NAREP", PT, "SHN")], "list"),
    ("- Front Desk depends on: Halcyon, KeyLok, the card printer.", [("FD", R, "PMS"), ("FD", R, "KCS")], "list"),

    # ---------------- passive ----------------
    ("The red book was superseded by FixLog in 2023.", [("FIX", S, "RED")], "passive"),
    ("Check-In is handled by the Front Desk.", [("CI", O, "FD")], "passive"),
    ("Service recovery is escalated to the Duty Manager, never to the revenue team.", [("GCH", E, "DM")], "passive"),
    ("The evacuation drill is preceded by the bell test.", [("WAT", P, "DRILL")], "passive"),
    ("The Key Card System is required by Check-In and by nothing else.", [("CI", R, "KCS")], "passive"),
    ("Rate Loading is managed by Revenue Management.", [("RL", O, "REVT")], "passive"),
    ("The complaint log is needed by complaint handling more than by anyone else.", [("GCH", R, "GCL")], "passive"),
    ("Innkeeper was replaced by Halcyon after the 2023 outage.", [("PMS", S, "INN")], "passive"),

    # ---------------- long distance ----------------
    ("Night Audit, and this catches out every new starter, especially the ones who came from hotels whose cloud systems never close the day, requires Halcyon to be in single-user mode.", [("NA", R, "PMS")], "distant"),
    ("The Executive Housekeeper, after fifteen years at the property, three changes of laundry contractor, two refurbishments and a flooded basement, still owns Room Inspection.", [("RI", O, "EHK")], "distant"),
    ("RateBridge, the box that pushes our rates out to every online agent we have a contract with, from the big two down to the small regional wholesalers, depends on the PMS.", [("CM", R, "PMS")], "distant"),
    ("Engineering, for everything from a dripping tap in 412 to a dead lift on a Saturday night, escalates to the Chief Engineer.", [("ENG", E, "CE")], "distant"),
    ("The Fire Drill (the full one with guests, not the quick staff walk-through that Sentinel runs on Mondays) is owned by the FSO.", [("DRILL", O, "FSO")], "distant"),

    # ---------------- traps: other senses, hedges, questions, doubtful reported speech ----------------
    ("Check-In on a Sunday afternoon requires patience from the whole Front Desk.", [], "trap"),
    ("The GM owned up to the Night Audit mistake at Monday's meeting.", [], "trap"),
    ("Housekeeping follows the Room Inspection checklist to the letter.", [], "trap"),
    ("The Revenue Manager is part of the reason Rate Loading is so quick these days.", [], "trap"),
    ("Do RateBridge changes need a Halcyon restart?", [], "trap"),
    ("Who owns the back dock, Engineering or F&B?", [], "trap"),
    ("Maybe the IBE depends on RateBridge, maybe it talks to Halcyon directly; nobody on nights knows.", [], "trap"),
    ("The auditor said end of day probably needs the key encoder offline too, but I haven't checked.", [], "trap"),
    ("Sentinel think the alarm panel might be part of the old building management setup, which Engineering disputes.", [], "trap"),
    ("The Chief Engineer replaced two burnt-out pumps in the Plant Room last week.", [], "trap"),
    ("Check-Out ran late because the PMS was crawling.", [], "trap"),
    ("The laundry contractor's invoice is paid by Finance, and Housekeeping just counts the bags.", [], "trap"),
    ("The FSO keeps a spare key to the Plant Room on her lanyard.", [], "trap"),
    ("A guest asked whether Late Checkout requires the Duty Manager's say-so.", [], "trap"),
    ("Apparently the handover note is supposed to be the FOM's, but in practice whoever is on nights writes it.", [], "trap"),
    ("The GM's favourite part of the Fire Drill is the headcount at the Loading Bay.", [], "trap"),
    ("The Halcyon licence is charged to Revenue Management's cost centre.", [], "trap"),
    ("Night Audit is followed closely by the GM, who reads the audit pack over breakfast.", [], "trap"),
    ("It is unclear whether Brightwater or Housekeeping owns the linen swap.", [], "trap"),
    ("Does Room Inspection come before or after the Linen Exchange? Ask the EHK.", [], "trap"),
    ("Someone in Reception claims the Booking Engine replaced the phone line, which it certainly did not.", [], "trap"),
    ("The Chief Engineer's van has to follow the Brightwater van out of the Loading Bay.", [], "trap"),

    # ---------------- negation ----------------
    ("The Booking Engine does not depend on Halcyon directly.", [], "negation"),
    ("The Duty Manager doesn't own the Fire Drill, whatever the night team thinks.", [], "negation"),
    ("Sentinel, whose engineers test the alarm panel every quarter, is not part of Engineering.", [], "negation"),
    ("Night Audit is owned by the Front Office Manager, not by the auditor who runs it.", [("NA", O, "FOM")], "negation"),
    ("Rate Loading isn't part of Night Audit, whatever the old manual says.", [], "negation"),
    ("Nobody escalates from Housekeeping straight to the GM.", [], "negation"),
    ("Neither the IBE nor RateBridge is owned by Front Desk; the Revenue Manager owns both.", [("IBE", O, "RM"), ("CM", O, "RM")], "negation"),
    ("FixLog did not replace the red book for the lifts, whose inspections stay on paper.", [], "negation"),
    ("For fire zoning the Loading Bay is not part of Back of House.", [], "negation"),
    ("Brightwater Laundry never escalates to the Duty Manager.", [], "negation"),
    ("Check-Out does not require the key encoder at all.", [], "negation"),

    # ---------------- conditional ----------------
    ("If Halcyon is down, Check-In falls back to paper registration cards and the key encoder alone.", [], "conditional"),
    ("When the alarm panel shows a fault, the Weekly Alarm Test is escalated to Sentinel.", [], "conditional"),
    ("Should the Night Auditor call in sick, the Duty Manager owns Night Audit for that night.", [], "conditional"),
    ("Late Checkout would need the MOD's OK if the room has already been resold.", [], "conditional"),
    ("Where RateBridge and Halcyon disagree on availability, Halcyon supersedes it.", [], "conditional"),
    ("If the complaint is about food, Guest Complaint Handling goes up to F&B first.", [], "conditional"),
    ("Rate Loading could come before Night Audit on nights when the revenue team works late.", [], "conditional"),
    ("In case a guest disputes a charge after Check-Out, it becomes part of Guest Complaint Handling.", [], "conditional"),

    # ---------------- history ----------------
    ("Innkeeper 4 used to feed the Booking Engine directly.", [], "history"),
    ("Until 2023 the red book was owned by the Chief Engineer.", [], "history"),
    ("The FOM no longer owns Rate Loading.", [], "history"),
    ("Before Halcyon, Night Audit required Innkeeper and a dot-matrix printer.", [], "history"),
    ("Back in 2019 every Fire Drill was escalated to the GM afterwards.", [], "history"),
    ("Housekeeping used to run Linen Exchange in-house, before Brightwater Laundry.", [], "history"),
    ("For a few months in 2021 Room Inspection came after Check-In, and nobody wants that again.", [], "history"),
    ("The Weekly Alarm Test was part of the old FRA until the 2024 rewrite.", [], "history"),

    # ---------------- plan ----------------
    ("From January, Revenue Management will own Late Checkout.", [], "plan"),
    ("We plan to make RateBridge depend on the IBE's new API instead of on Halcyon.", [], "plan"),
    ("The Chief Engineer is expected to take over the Fire Alarm Panel next quarter.", [], "plan"),
    ("Halcyon's mobile key is due to supersede the key encoder next year.", [], "plan"),
    ("The FOM intends to make the complaint log part of the Shift Handover Note.", [], "plan"),
    ("Ideally, Room Inspection would happen before Linen Exchange rather than after it.", [], "plan"),
]

# add a few plain sentences that state no configured relation at all
SENTENCES += [
    ("The Night Auditor and the MOD share the back office after midnight.", [], None),
    ("Brightwater delivered forty clean duvets to the Loading Bay this morning.", [], None),
    ("Reception printed the audit pack twice because the first copy jammed.", [], None),
]

CUES = {"relative_clause", "wrong_pair", "coordination", "list", "passive", "distant", "trap",
        "negation", "conditional", "history", "plan"}
KINDS = {"team", "role", "system", "document", "procedure", "place", "product", "vendor"}


def names_re(name):
    return re.compile(r"(?<!\w)" + re.escape(name) + r"(?!\w)", re.IGNORECASE)


def main():
    errors = []
    titles = [t for t, _, _ in ENTRIES]
    if len(set(titles)) != len(titles):
        errors.append("duplicate title")
    surface = {}
    for t, als, k in ENTRIES:
        if k not in KINDS:
            errors.append("bad kind %s" % k)
        surface[t] = [t] + list(als)
    for v in A.values():
        if v not in surface:
            errors.append("abbrev to unknown title %s" % v)
    relnames = {r["name"] for r in RELATIONS}
    seen = set()
    out_sents = []
    for text, gold, cue in SENTENCES:
        if text in seen:
            errors.append("duplicate sentence: " + text)
        seen.add(text)
        if cue is not None and cue not in CUES:
            errors.append("bad cue %s: %s" % (cue, text))
        named = [t for t in titles if any(names_re(s).search(text) for s in surface[t])]
        if len(named) < 2:
            errors.append("names < 2 entries (%s): %s" % (named, text))
        g2 = []
        for a, rel, b in gold:
            ta, tb = A.get(a, a), A.get(b, b)
            if ta not in surface or tb not in surface:
                errors.append("unknown title in gold: %s" % text)
                continue
            if rel not in relnames:
                errors.append("bad relation %s" % rel)
            if ta == tb:
                errors.append("self-loop: " + text)
            for t in (ta, tb):
                if t not in named:
                    errors.append("gold end %s not in sentence: %s" % (t, text))
            g2.append([ta, rel, tb])
        if len({tuple(x) for x in g2}) != len(g2):
            errors.append("duplicate triple: " + text)
        item = {"text": text, "gold": g2}
        if cue is not None:
            item["cue"] = cue
        out_sents.append(item)
    if errors:
        for e in errors:
            print("ERROR", e)
        sys.exit(1)

    data = {
        "domain": DOMAIN,
        "note": NOTE,
        "relations": RELATIONS,
        "entries": [{"title": t, "aliases": list(a), "kind": k} for t, a, k in ENTRIES],
        "sentences": out_sents,
    }
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "extraction_set5.json"), "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1, ensure_ascii=False)
        f.write("\n")

    # counts for the README
    n = len(out_sents)
    withg = sum(1 for s in out_sents if s["gold"])
    print("entries", len(ENTRIES), "sentences", n, "with gold", withg, "empty", n - withg)
    rc = Counter(tr[1] for s in out_sents for tr in s["gold"])
    print("triples", sum(rc.values()), dict(rc.most_common()))
    cc = Counter()
    for s in out_sents:
        c = s.get("cue", "(none)")
        cc[(c, bool(s["gold"]))] += 1
    for c in ["(none)"] + sorted(CUES, key=lambda x: ["relative_clause", "wrong_pair", "coordination", "list",
                                                     "passive", "distant", "trap", "negation", "conditional",
                                                     "history", "plan"].index(x)):
        a, b = cc[(c, True)], cc[(c, False)]
        print("| %s | %d | %d | %d |" % (c, a + b, a, b))
    print("OK")


if __name__ == "__main__":
    main()
