# One-off: shorten B entries and A-B notes so their length does not stand out from the crowd.
import re, os
HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NEW = {
"hospital_pharmacy": [
("Carried-back stock earns wholesaler credit only with a PH-117 signed by two pharmacists in the tote.",
 "Cardinal's credit desk rejects any tote from Lakeshore that lacks form PH-117 with an NDC-by-NDC count. The form needs signatures from two licensed pharmacists, or the tote is destroyed without reimbursement.",
 "Cardinal refuses totes without a two-signature PH-117.", "Read before sealing a tote for Cardinal."),
("TT-3 readings lag the air by forty minutes, so a short excursion may never show here.",
 "TT-3 sensors sit in a glycol-filled bottle, so their readings trail the air by roughly forty minutes. Brief door-open spikes are flattened entirely and never appear in the log.",
 "TT-3 sensors lag the air by forty minutes.", "Read when interpreting TT-3 logs."),
("Thyroid hormone is memo-listed: any maker switch still needs the prescriber paged and a level booked.",
 "P&T memo 2023-14 lists narrow-therapeutic-index agents: thyroid hormone, warfarin, phenytoin, tacrolimus and lithium. Any switch of manufacturer for these means paging the prescriber and booking the patient's next TSH or serum level.",
 "NTI maker switches need prescriber paging and a level.", "Read before switching an NTI agent's manufacturer."),
("Tells the buyer which account to bill: 88-231 is 340B-only and barred for inpatient use.",
 "Lakeshore's McKesson Specialty account 88-231 exists solely for 340B-eligible outpatient infusion. Inpatient purchases billed to it become diversion findings in the annual 340B audit; they belong on GPO account 88-907.",
 "Account 88-231 is 340B-only; inpatient buys use 88-907.", "Read before billing a McKesson Specialty purchase."),
("Anything still open after a day goes to Whitfield, who decides on a DEA 106 filing.",
 "Dana Whitfield, the diversion officer, takes over every narcotic count mismatch still open after 24 hours. She alone decides whether a DEA Form 106 theft-or-loss report is filed.",
 "Whitfield decides DEA 106 filings for mismatches open past a day.", "Read when a narcotic count mismatch lingers."),
("While the anteroom certification is lapsed, a four-hour cap replaces the refrigerated limits here.",
 "The anteroom failed its particle-count recertification in March, and the vendor re-test is set for late May. Until then, every hood preparation is capped at four hours from first puncture.",
 "Hood preparations expire four hours after puncture until recertified.", "Read before labelling hood preparations this spring."),
("Normal reorders cannot reach this target; the distributor trims shipments to 80 percent of past purchases.",
 "Since the North Cove plant closed, the distributor caps saline and Ringer's at 80 percent of Lakeshore's prior twelve-month purchases. Anything above is silently trimmed at the warehouse.",
 "Saline shipments are capped at 80 percent of past purchases.", "Read before placing saline purchases."),
("Must finish before cabinet enrollment, or an orphan account blocks the later directory sync.",
 "Agency clinicians get a network ID only after the Monday CRED-M credentialing batch completes in Active Directory. Enrolling them anywhere earlier creates an orphan account that blocks the later directory sync.",
 "No network ID for agency clinicians before Monday's CRED-M batch.", "Read before enrolling agency clinicians anywhere."),
("P-listed items such as warfarin, even empty vials, go to the black bins instead.",
 "Nicotine, warfarin and arsenic trioxide are RCRA P-listed, so even empty vials are acute hazardous waste. They go to the black bins in the dock cage, never to outside vendors.",
 "P-listed items, even empty vials, go to the black bins.", "Read before boxing warfarin or nicotine products."),
("For BlueRiver members, bedside delivery covers only a seven-day emergency supply of maintenance drugs.",
 "BlueRiver Community Plan members are locked to the plan's mail-order vendor for maintenance drugs, including anticoagulants and inhalers. Any other dispensing site is paid for only a seven-day emergency supply.",
 "BlueRiver members get only seven days outside mail order.", "Read when a BlueRiver member needs maintenance drugs."),
],
"freight_rail_maintenance": [
("If the setout is at Dunmore, every handbrake and the derail are mandatory before uncoupling.",
 "The Dunmore siding sits on a 1.2 percent grade descending toward the Highway 9 crossing. Any car left there needs every handbrake applied and the derail lined, per bulletin SB-19.",
 "Cars left at Dunmore need every handbrake and the derail.", "Read before leaving a car at Dunmore."),
("Stretch readings toward this target are 8 percent high on TX-60 units without the correction chart.",
 "Every TX-60 hydraulic tensor in the Western district reads about 8 percent high since the 2022 seal kit replacement. Foremen must apply the correction chart in the tool crate before recording stretch.",
 "TX-60 tensors read 8 percent high; apply the chart.", "Read before recording TX-60 stretch."),
("On the Vermilion key route the company cadence doubles this minimum and adds a spring gauge-restraint run.",
 "The Vermilion Subdivision carries PIH hazmat traffic and is a designated key route. The company standard walks its turnouts twice a month and adds a gauge-restraint measurement each spring.",
 "Vermilion turnouts are walked twice monthly plus a spring run.", "Read when planning Vermilion turnout walks."),
("Only the Harlan QMI roster may close the 49A entry, and nights have one qualified person.",
 "Only employees on the Harlan qualified mechanical inspector roster may complete F6180.49A entries. Night coverage is one person, Ray Okafor; when he is off, units wait for the day shift.",
 "Harlan nights have a single QMI, Ray Okafor.", "Read when planning night work at Harlan."),
("Two stabilizer passes count as the required tonnage, so the 10 mph order can lift sooner.",
 "The DTS-62 stabilizer consolidates ballast in one run by vibrating it under load. Under standard ES-44, two passes count as 100,000 gross tons of traffic.",
 "Two DTS-62 passes count as 100,000 gross tons.", "Read when a DTS-62 follows a surfacing gang."),
("Hiawatha Sub blocks must avoid 05:30–08:15, when Desk 7 protects Amtrak's Empire Builder.",
 "The dispatcher on Desk 7 grants no occupancy on the Hiawatha Subdivision between 05:30 and 08:15, when Amtrak's Empire Builder passes. The host agreement imposes $6,000 per minute of delay.",
 "No occupancy on the Hiawatha Sub from 05:30 to 08:15.", "Read before planning Hiawatha Sub occupancy."),
("Any indication at a W-77 weld gets joint bars regardless of size, stricter than this table.",
 "Thermite kits from batch OT-4471 showed porosity; joints poured with them in mid-2023 are listed in spreadsheet W-77. Any indication at a W-77 joint gets joint bars regardless of size.",
 "Any indication at a W-77 joint gets joint bars.", "Read when an indication is at a 2023 thermite weld."),
("Spring and summer visits to Sand River need the six-week wildlife permit because ospreys nest there.",
 "Ospreys nest on pile bents 14 and 15 of the Sand River crossing. Work near them from April to August needs a US Fish and Wildlife permit, which takes six weeks.",
 "Sand River work from April to August needs a six-week permit.", "Read before planning a Sand River visit."),
("Part of this lockout for Tier 4 units: wait ten minutes, then meter TP-3 and TP-4.",
 "On SD70ACe-T4 units the auxiliary inverter's capacitor bank holds 600 volts for ten minutes after the battery knife opens. Electricians verify zero at test points TP-3 and TP-4 before anyone reaches in.",
 "Tier 4 units hold 600 V for ten minutes.", "Read before reaching into SD70ACe-T4 cabinets."),
("Download the event recorder before the unit moves again; only 48 operating hours are retained.",
 "GE event recorders keep only the last 48 operating hours, so running the unit again overwrites the wreck data. Download it with QuickView through the cab port first.",
 "Download event recorders before the unit runs again.", "Read before moving a locomotive after a wreck."),
],
"insurance_claims": [
("Adds fifteen days to this clock for losses in counties named in a catastrophe bulletin.",
 "A TDI catastrophe bulletin adds 15 days to statutory deadlines for losses in its listed counties. The bulletin number must be cited in the file note, or examiners ignore the extension.",
 "Catastrophe bulletins add 15 days in listed counties.", "Read when a loss is in a bulletin county."),
("For New York losses the 30-day DFS clock runs from the first indicator, not the referral.",
 "New York Regulation 95 requires reporting a likely fraudulent loss to the DFS Frauds Bureau within 30 days. The clock runs from the first fraud indicator in the file.",
 "New York fraud cases go to DFS within 30 days.", "Read when a New York loss shows fraud indicators."),
("For Georgia owners the CCC One figure omits the title tax, which must be added.",
 "Georgia charges a one-time title tax, TAVT, on car purchases instead of yearly sales tax. Payouts to Georgia owners must add TAVT at 7 percent, which CCC One leaves out by default.",
 "Georgia payouts must add the 7 percent TAVT.", "Read before a payout to a Georgia car owner."),
("Dwelling drafts above $5,000 must also name the lender listed on the declarations page.",
 "Where the declarations page lists a mortgagee, every dwelling repair draft above $5,000 must name the lender jointly with the insured. Otherwise Harbourline may have to reimburse the lender a second time.",
 "Dwelling drafts above $5,000 must name the lender.", "Read before issuing a dwelling repair draft."),
("Until September, Gulf region approvals up to $250,000 go to Devon Pryce instead.",
 "Marisol Quintero, Gulf region claims manager, is on leave until 30 September. Her sign-off on files up to $250,000 passes to Devon Pryce; larger files go to the home office committee.",
 "Quintero's sign-off passes to Devon Pryce until September.", "Read when a Gulf file needs the regional manager."),
("In Maryland and Washington the deductible comes back in full first; pro-rata splits are not allowed.",
 "Maryland and Washington apply the made-whole doctrine: the customer's deductible must be fully recovered before Harbourline keeps any recovered dollars. Pro-rata splits of a partial recovery breach this rule.",
 "Maryland and Washington deductibles come back first, in full.", "Read before splitting a partial recovery."),
("Desk-only handling forfeits treaty recovery on catastrophe losses above $100,000 unless someone views the damage.",
 "The Gallant Re catastrophe treaty pays only when a licensed person physically viewed the damage on losses above $100,000 gross. Desk-only files above that line are excluded from recovery.",
 "Treaty recovery above $100,000 requires an in-person viewing.", "Read when a catastrophe loss may exceed $100,000."),
("Direct-billed Enterprise bookings run past the endorsement maximum unless a stop is entered in ARMS.",
 "Enterprise ARMS direct-bill bookings extend automatically in 3-day increments unless the handler enters a stop. Days past the endorsement maximum are billed to Harbourline, not the insured.",
 "ARMS bookings auto-extend and overruns bill to Harbourline.", "Read when managing Enterprise direct-bill bookings."),
("If an ORM termination was transmitted, a corrected Section 111 record must accompany the reopening.",
 "Harbourline reports ongoing responsibility (ORM) for CMS beneficiaries through the quarterly Section 111 feed. Once an ORM termination is transmitted, resuming responsibility needs a corrected record, or CMS assesses daily penalties.",
 "Resuming ORM after termination needs a corrected Section 111 record.", "Read before resuming payments for a CMS beneficiary."),
("Mandatory paragraph of every California declination; without it the letter legally never went out.",
 "Every declination to a California insured must contain the CDI review paragraph required by 10 CCR 2695.7(b)(3). Letters without it count as never issued, so the statutory clock keeps running.",
 "California declinations need the CDI review paragraph.", "Read when preparing a California declination."),
],
}
for name, rows in NEW.items():
    p = os.path.join(HERE, name + ".txt")
    lines = open(p, encoding="utf-8").read().split("\n")
    ie = ib = 0
    for i, l in enumerate(lines):
        if l.startswith("EDGE: "):
            rel, d, _ = l[6:].split(" | ")
            lines[i] = f"EDGE: {rel} | {d} | {rows[ie][0]}"; ie += 1
        elif l.startswith("B: "):
            f = l[3:].split(" | ")
            f[4], f[5], f[6] = rows[ib][1], rows[ib][2], rows[ib][3]
            lines[i] = "B: " + " | ".join(f); ib += 1
    assert ie == ib == 10, (name, ie, ib)
    open(p, "w", encoding="utf-8").write("\n".join(lines))
print("ok")
