# One-off: second pass making B content/summary and A-B notes no longer than typical crowd ones.
import os
HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
C = {
"hospital_pharmacy": [
(None, "Cardinal's credit desk rejects any Lakeshore tote lacking form PH-117. The form needs two licensed pharmacists' signatures, or the tote is destroyed unreimbursed.", "Cardinal needs a two-signature PH-117."),
(None, "TT-3 sensors sit in glycol-filled bottles, so readings trail the air by about forty minutes. Brief door-open spikes never appear in their log.", "TT-3 sensors lag forty minutes."),
(None, "P&T memo 2023-14 lists thyroid hormone, warfarin, phenytoin, tacrolimus and lithium as narrow-therapeutic-index agents. Switching their manufacturer means paging the prescriber and booking a serum level.", "NTI maker switches need prescriber paging."),
(None, "McKesson Specialty account 88-231 is solely for 340B-eligible outpatient infusion. Inpatient purchases on it become 340B audit findings; they belong on GPO account 88-907.", "Account 88-231 is 340B-only."),
(None, "Dana Whitfield, the diversion officer, takes over every narcotic count mismatch open past 24 hours. She alone decides whether a DEA Form 106 report is filed.", "Whitfield owns mismatches open past a day."),
(None, "The anteroom failed particle-count recertification in March; the vendor re-test is in late May. Until then every hood preparation is capped at four hours from puncture.", "Hood preparations capped at four hours."),
(None, "Since the North Cove plant closed, the distributor caps saline at 80 percent of Lakeshore's prior twelve-month purchases. Anything above is silently trimmed.", "Saline capped at 80 percent of history."),
(None, "Agency clinicians get a network ID only after Monday's CRED-M credentialing batch. Earlier enrollment creates an orphan account that blocks the directory sync.", "Agency IDs wait for Monday's CRED-M."),
(None, "Nicotine, warfarin and arsenic trioxide are RCRA P-listed, so even empty vials are acute hazardous waste. They go to the black bins, never to outside vendors.", "P-listed items go to black bins."),
(None, "BlueRiver Community Plan members are locked to its mail-order vendor for maintenance drugs. Other dispensing sites are paid only for a seven-day emergency supply.", "BlueRiver locks members to mail order."),
],
"freight_rail_maintenance": [
("At Dunmore, every handbrake and the derail are mandatory before uncoupling the car.", "The Dunmore siding sits on a 1.2 percent grade toward the Highway 9 crossing. Cars left there need every handbrake applied and the derail lined.", "Dunmore cars need every handbrake and derail."),
("TX-60 stretch readings toward this target are 8 percent high without the chart.", "Every TX-60 hydraulic tensor in the Western district reads about 8 percent high since its 2022 seal kit. Foremen apply the correction chart before recording stretch.", "TX-60 tensors read 8 percent high."),
("On the Vermilion key route, company cadence doubles this minimum and adds a spring run.", "The Vermilion Subdivision is a key route for PIH hazmat traffic. Company standard walks its turnouts twice a month, plus a gauge-restraint measurement each spring.", "Vermilion turnouts walked twice monthly."),
("Only the Harlan QMI roster may close the 49A entry; nights have one.", "Only the Harlan qualified mechanical inspector roster may complete F6180.49A entries. Nights have one such person, Ray Okafor; otherwise units wait for day shift.", "Harlan nights have one QMI."),
("Two stabilizer passes count as the required tonnage, so the order lifts sooner.", "The DTS-62 stabilizer consolidates ballast in one run by vibrating it under load. Under standard ES-44, two passes count as 100,000 gross tons of traffic.", "Two DTS-62 passes equal 100,000 tons."),
("Hiawatha Sub blocks must avoid 05:30–08:15, protected by Desk 7 for Amtrak.", "Desk 7 grants no occupancy on the Hiawatha Subdivision from 05:30 to 08:15, when Amtrak's Empire Builder passes. Delays cost $6,000 a minute under the host agreement.", "Hiawatha Sub closed 05:30 to 08:15."),
("Any indication at a W-77 weld gets joint bars, regardless of this table.", "Thermite kits from batch OT-4471 showed porosity; joints poured with them in 2023 are listed in spreadsheet W-77. Any indication there gets joint bars regardless of size.", "W-77 joints get bars on any indication."),
("Spring and summer Sand River visits need a six-week wildlife permit for ospreys.", "Ospreys nest on pile bents 14 and 15 of the Sand River crossing. Work near them from April to August needs a six-week wildlife permit.", "Sand River osprey work needs a permit."),
("For Tier 4 units: wait ten minutes, then meter TP-3 and TP-4.", "On SD70ACe-T4 units the inverter capacitor bank holds 600 volts for ten minutes after the battery knife opens. Electricians verify zero at TP-3 and TP-4.", "Tier 4 units hold 600 V ten minutes."),
("Download the event recorder before the unit moves; only 48 hours are kept.", "GE event recorders keep only the last 48 operating hours, so running the unit again overwrites wreck data. Download it with QuickView first.", "Download event recorders before reuse."),
],
"insurance_claims": [
("Adds fifteen days to this clock in counties named in a catastrophe bulletin.", "A TDI catastrophe bulletin adds 15 days to statutory deadlines in its listed counties. The file note must cite the bulletin number, or examiners ignore it.", "Catastrophe bulletins add 15 days."),
("New York losses also need a DFS filing within 30 days of the first indicator.", "New York Regulation 95 requires reporting a likely fraudulent loss to the DFS Frauds Bureau within 30 days. The clock starts at the first fraud indicator.", "New York fraud goes to DFS in 30 days."),
("Georgia payouts must add the title tax that the CCC One figure omits.", "Georgia charges a one-time title tax, TAVT, instead of yearly sales tax. Payouts to Georgia owners must add TAVT at 7 percent; CCC One omits it.", "Georgia payouts must add TAVT."),
("Dwelling drafts above $5,000 must also name the lender from the declarations.", "If the declarations list a mortgagee, dwelling repair drafts above $5,000 must name the lender jointly. Otherwise Harbourline may reimburse the lender twice.", "Large dwelling drafts must name the lender."),
("Until September, Gulf region approvals up to $250,000 go to Devon Pryce.", "Marisol Quintero, Gulf region claims manager, is on leave until 30 September. Devon Pryce holds her sign-off up to $250,000 meanwhile.", "Devon Pryce covers Quintero until September."),
("In Maryland and Washington the deductible is recovered first; no pro-rata splits.", "Maryland and Washington apply the made-whole doctrine: the customer's deductible is recovered in full before Harbourline keeps anything. Pro-rata splits breach it.", "Made-whole: deductible recovered first."),
("Desk-only handling forfeits treaty recovery on catastrophe losses above $100,000 gross.", "The Gallant Re catastrophe treaty excludes losses above $100,000 gross unless a licensed person physically viewed the damage. Desk-only files above that line recover nothing.", "Treaty needs in-person viewing above $100,000."),
("Direct-billed Enterprise bookings overrun the endorsement maximum unless stopped in ARMS.", "Enterprise ARMS direct-bill bookings extend automatically every three days unless the handler enters a stop. Days past the endorsement maximum are billed to Harbourline.", "ARMS bookings auto-extend until stopped."),
("A transmitted ORM termination needs a corrected Section 111 record on reopening.", "Harbourline reports ongoing responsibility (ORM) for CMS beneficiaries in the quarterly Section 111 feed. Resuming ORM after a transmitted termination needs a corrected record.", "Resumed ORM needs a corrected record."),
("Required in every California declination; without it the letter never legally went out.", "Every declination to a California insured must contain the CDI review paragraph under 10 CCR 2695.7(b)(3). Without it, the letter counts as never issued.", "California declinations need the CDI paragraph."),
],
}
for name, rows in C.items():
    p = os.path.join(HERE, name + ".txt")
    lines = open(p, encoding="utf-8").read().split("\n")
    ie = ib = 0
    for i, l in enumerate(lines):
        if l.startswith("EDGE: "):
            if rows[ie][0]:
                rel, d, _ = l[6:].split(" | ")
                lines[i] = f"EDGE: {rel} | {d} | {rows[ie][0]}"
            ie += 1
        elif l.startswith("B: "):
            f = l[3:].split(" | ")
            f[4], f[5] = rows[ib][1], rows[ib][2]
            lines[i] = "B: " + " | ".join(f); ib += 1
    open(p, "w", encoding="utf-8").write("\n".join(lines))
print("ok")
