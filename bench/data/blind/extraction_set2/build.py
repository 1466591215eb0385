# Assembles the hand-written sentences below into JSON. No text is generated here.
import json
E = [
 ("Stage Management", ["SM team", "stage managers", "SM"], "team"),
 ("Wardrobe Department", ["Wardrobe"], "team"),
 ("Lighting Crew", ["LX crew", "sparks", "LX"], "team"),
 ("Front of House", ["FOH"], "team"),
 ("Box Office", ["BO"], "team"),
 ("Scenic Workshop", ["the Workshop", "scene shop"], "team"),
 ("Rigging Crew", ["riggers"], "team"),
 ("Production Manager", ["PM"], "role"),
 ("Deputy Stage Manager", ["DSM"], "role"),
 ("Technical Director", ["TD"], "role"),
 ("House Manager", ["duty house manager", "HM"], "role"),
 ("Fire Warden", ["warden"], "role"),
 ("Technical Rehearsal", ["tech", "the tech"], "procedure"),
 ("Dress Rehearsal", ["dress", "the dress"], "procedure"),
 ("Get-In", ["load-in"], "procedure"),
 ("Get-Out", ["strike", "load-out"], "procedure"),
 ("Fire Curtain Test", ["iron test", "safety curtain drop"], "procedure"),
 ("Rigging Inspection", ["LOLER check", "rig check"], "procedure"),
 ("Front of House Clearance", ["house clearance", "clearance"], "procedure"),
 ("Show Report", ["nightly report"], "document"),
 ("Prompt Book", ["the book", "prompt copy"], "document"),
 ("Production Risk Assessment", ["PRA", "risk assessment"], "document"),
 ("Cue Sheet", ["cue list"], "document"),
 ("Running Order", ["RO"], "document"),
 ("Eos Lighting Desk", ["Eos", "the Eos desk"], "system"),
 ("Strand 520 Desk", ["the Strand", "Strand 520"], "system"),
 ("Counterweight Fly System", ["fly system", "the flys"], "system"),
 ("Spektrix Ticketing", ["Spektrix", "ticketing system"], "system"),
 ("Manual Booking Ledger", ["the ledger", "booking ledger"], "system"),
 ("Main Stage", ["the stage"], "place"),
 ("Fly Floor", [], "place"),
 ("Loading Dock", ["dock"], "place"),
 ("Paint Frame", ["paint bay"], "place"),
 ("Rehearsal Room B", ["RRB", "Room B"], "place"),
]
SM="Stage Management"; WD="Wardrobe Department"; LX="Lighting Crew"; FOH="Front of House"; BO="Box Office"
SW="Scenic Workshop"; RC="Rigging Crew"; PM="Production Manager"; DSM="Deputy Stage Manager"; TD="Technical Director"
HM="House Manager"; FW="Fire Warden"; TR="Technical Rehearsal"; DR="Dress Rehearsal"; GI="Get-In"; GO="Get-Out"
FCT="Fire Curtain Test"; RI="Rigging Inspection"; FOHC="Front of House Clearance"; SR="Show Report"; PB="Prompt Book"
PRA="Production Risk Assessment"; CS="Cue Sheet"; RO="Running Order"; EOS="Eos Lighting Desk"; STR="Strand 520 Desk"
FLY="Counterweight Fly System"; SPX="Spektrix Ticketing"; LED="Manual Booking Ledger"; MS="Main Stage"; FF="Fly Floor"
LD="Loading Dock"; PF="Paint Frame"; RRB="Rehearsal Room B"
R="requires"; O="owned_by"; P="precedes"; PO="part_of"; S="supersedes"; SO="signed_off_by"

S_ = [
# ---- plain / ordinary variation ----
("The Technical Rehearsal requires a finished Cue Sheet.", [(TR,R,CS)], None),
("The Prompt Book is owned by the Deputy Stage Manager.", [(PB,O,DSM)], None),
("Get-In precedes the Technical Rehearsal.", [(GI,P,TR)], None),
("The tech always comes before the dress.", [(TR,P,DR)], None),
("The Cue Sheet is part of the Prompt Book.", [(CS,PO,PB)], None),
("Spektrix replaced the Manual Booking Ledger at the start of the 2019 season.", [(SPX,S,LED)], None),
("The Production Risk Assessment is signed off by the Production Manager.", [(PRA,SO,PM)], None),
("Sparks look after the Eos desk.", [(EOS,O,LX)], None),
("The Fly Floor is part of the Main Stage.", [(FF,PO,MS)], None),
("The Counterweight Fly System is maintained by the Rigging Crew.", [(FLY,O,RC)], None),
("Rigging Inspection is part of every Get-In.", [(RI,PO,GI)], None),
("The Dress Rehearsal needs sign-off from the Technical Director.", [(DR,SO,TD)], None),
("FOH owns Front of House Clearance.", [(FOHC,O,FOH)], None),
("The Show Report is owned by Stage Management.", [(SR,O,SM)], None),
("The Paint Frame sits inside the Scenic Workshop.", [(PF,PO,SW)], None),
("Eos superseded the Strand 520 Desk when the lighting box was refitted.", [(EOS,S,STR)], None),
("Front of House Clearance requires a completed Fire Curtain Test.", [(FOHC,R,FCT)], None),
("The Running Order is part of the Show Report.", [(RO,PO,SR)], None),
("Step 3: the Fire Curtain Test comes before Front of House Clearance.", [(FCT,P,FOHC)], None),
("The Get-Out is run by the Production Manager.", [(GO,O,PM)], None),
("The Box Office runs Spektrix.", [(SPX,O,BO)], None),
("The House Manager signs off Front of House Clearance each night.", [(FOHC,SO,HM)], None),
("The Get-In depends on the Loading Dock.", [(GI,R,LD)], None),
("The Fire Warden is part of Front of House.", [(FW,PO,FOH)], None),
("The Dress Rehearsal requires a printed Running Order.", [(DR,R,RO)], None),
("The DSM is part of the SM team.", [(DSM,PO,SM)], None),
("Rigging Inspection is signed off by the TD.", [(RI,SO,TD)], None),
("The Rigging Crew is responsible for the Rigging Inspection.", [(RI,O,RC)], None),
("Cue Sheet: owned by the Lighting Crew, signed off by the DSM.", [(CS,O,LX),(CS,SO,DSM)], None),
("Technical Rehearsal. Requires: Eos Lighting Desk, Counterweight Fly System.", [(TR,R,EOS),(TR,R,FLY)], "list"),
("First the Get-In, then the tech, then the dress.", [(GI,P,TR),(TR,P,DR)], "list"),
("Rehearsal Room B belongs to Stage Management.", [(RRB,O,SM)], None),
("The prompt copy relies on the Running Order.", [(PB,R,RO)], None),
("The Scenic Workshop needs the Loading Dock for every delivery.", [(SW,R,LD)], None),
("The Show Report is approved by the Production Manager before it is circulated.", [(SR,SO,PM)], None),
("Strike is run off the dock, so the Get-Out needs the Loading Dock clear.", [(GO,R,LD)], None),
("The Fire Curtain Test is signed off by the Fire Warden.", [(FCT,SO,FW)], None),
("The warden runs the iron test.", [(FCT,O,FW)], None),
("Wardrobe needs the Running Order by noon on show days.", [(WD,R,RO)], None),
("The Dress Rehearsal is run by the Deputy Stage Manager.", [(DR,O,DSM)], None),
("Stage Management runs the Technical Rehearsal.", [(TR,O,SM)], None),
("Front of House depends on Spektrix for its door lists.", [(FOH,R,SPX)], None),
("The Main Stage includes the Counterweight Fly System.", [(FLY,PO,MS)], None),
("The dock is the responsibility of the Production Manager.", [(LD,O,PM)], None),
("The Fly Floor is run by the Rigging Crew.", [(FF,O,RC)], None),
("Box Office is part of Front of House.", [(BO,PO,FOH)], None),
("All Get-In activity shall be signed off by the Production Manager.", [(GI,SO,PM)], None),
("The nightly report includes the Running Order.", [(RO,PO,SR)], None),
("Rigging Inspection requires access to the Fly Floor.", [(RI,R,FF)], None),
("The Production Risk Assessment is required by the Get-In.", [(GI,R,PRA)], "passive"),
("For the record: the Strand 520 Desk was replaced by the Eos Lighting Desk in 2018.", [(EOS,S,STR)], "passive"),
("The Technical Director approves the Technical Rehearsal.", [(TR,SO,TD)], None),
# ---- traps: naive two-names-around-a-phrase goes wrong ----
("The Lighting Crew, unlike Wardrobe and the Rigging Crew, needs the Cue Sheet.", [(LX,R,CS)], "list"),
("The Cue Sheet that the Lighting Crew owns is signed off by the DSM.", [(CS,O,LX),(CS,SO,DSM)], "relative_clause"),
("A shift on the Fly Floor during the Get-In requires patience more than anything.", [], "trap"),
("The Box Office owns up to its mistakes in Spektrix quickly.", [], "trap"),
("The DSM, who is part of Stage Management, owns the Prompt Book.", [(DSM,PO,SM),(PB,O,DSM)], "relative_clause"),
("The Rigging Inspection, which the Rigging Crew owns, precedes the tech.", [(RI,O,RC),(RI,P,TR)], "relative_clause"),
("The Production Manager signs off the risk assessment that the Get-In requires.", [(PRA,SO,PM),(GI,R,PRA)], "relative_clause"),
("Front of House Clearance is signed off by the House Manager, not by the Fire Warden.", [(FOHC,SO,HM)], "wrong_pair"),
("Spektrix, which replaced the ledger, is run by the Box Office.", [(SPX,S,LED),(SPX,O,BO)], "relative_clause"),
("The tech and the dress both require the Eos desk.", [(TR,R,EOS),(DR,R,EOS)], "coordination"),
("The Get-In precedes the tech, and the Get-Out follows the final performance.", [(GI,P,TR)], "coordination"),
("Wardrobe needs the Running Order, while the Scenic Workshop needs the dock.", [(WD,R,RO),(SW,R,LD)], "coordination"),
("The Show Report, which the DSM drafts during the interval from notes sent by the Lighting Crew and whatever the House Manager radios through about latecomers and the bar queue, is owned by Stage Management.", [(SR,O,SM)], "distant"),
("The Fire Curtain Test is required by Front of House Clearance, not by the dress.", [(FOHC,R,FCT)], "passive"),
("Because the Technical Director signs off Rigging Inspection, the riggers wait for the TD before the fly system is used.", [(RI,SO,TD)], "wrong_pair"),
("The Paint Frame, next to the Loading Dock, is part of the Scenic Workshop.", [(PF,PO,SW)], "wrong_pair"),
("The Box Office and Wardrobe share a corridor, but only the Box Office depends on Spektrix.", [(BO,R,SPX)], "list"),
("The Lighting Crew trained on the Strand 520 Desk for years; it was replaced by the Eos Lighting Desk in 2018.", [(EOS,S,STR)], "wrong_pair"),
("Stage Management owns the Show Report, and the Running Order is part of it.", [(SR,O,SM),(RO,PO,SR)], "coordination"),
("Stage Management, the Lighting Crew and the riggers all attend the tech, but only Stage Management owns it.", [(TR,O,SM)], "list"),
("The Wardrobe Department needs patience from the DSM during the dress.", [], "trap"),
("The Running Order lists who owns each scene change, so it mentions both the Rigging Crew and Wardrobe.", [], "trap"),
("Front of House Clearance belongs to FOH, but the key to the Paint Frame belongs to the Technical Director.", [(FOHC,O,FOH)], "wrong_pair"),
("The Counterweight Fly System is part of the Main Stage, and the Rigging Crew maintains it.", [(FLY,PO,MS),(FLY,O,RC)], "coordination"),
("Before the Dress Rehearsal, the House Manager walks through Rehearsal Room B.", [], "wrong_pair"),
("The Production Manager owns the budget line for the Eos Lighting Desk, not the desk itself.", [], "trap"),
("The Scenic Workshop is part of the reason the Get-In overruns.", [], "trap"),
("The Get-In includes the Rigging Inspection and finishes at the Loading Dock.", [(RI,PO,GI)], "coordination"),
("The ticketing system the Box Office runs replaced the Manual Booking Ledger, which Front of House still keeps in a drawer.", [(SPX,O,BO),(SPX,S,LED)], "relative_clause"),
("The Technical Director requires that the Rigging Crew sign off the fly system every week.", [(FLY,SO,RC)], "wrong_pair"),
("After the iron test, the House Manager, not the Fire Warden, approves the house clearance.", [(FCT,P,FOHC),(FOHC,SO,HM)], "wrong_pair"),
("Clearance depends on the iron test, which itself depends on the curtain motor having been serviced.", [(FOHC,R,FCT)], "relative_clause"),
("Lighting Crew members who are part of the Rigging Crew for a Get-In must note it in the Show Report.", [], "trap"),
("The DSM calls the show from the Prompt Book, which the Lighting Crew's Cue Sheet is part of.", [(CS,PO,PB)], "relative_clause"),
("Where the Running Order and the Cue Sheet disagree on a lighting state, the Cue Sheet supersedes it.", [], "conditional"),
("The Main Stage is owned by nobody in particular, but the Fly Floor above it is run by the riggers.", [(FF,O,RC)], "wrong_pair"),
("The Production Manager, together with the Technical Director, signs off the Production Risk Assessment.", [(PRA,SO,PM),(PRA,SO,TD)], "coordination"),
("Neither the Box Office nor Wardrobe owns the Loading Dock; the Production Manager does.", [(LD,O,PM)], "negation"),
("Rehearsal Room B, where the DSM prepares the Prompt Book, belongs to Stage Management.", [(RRB,O,SM)], "relative_clause"),
("Stage Management needs the Running Order and the Cue Sheet before the tech; the riggers need only the Production Risk Assessment.", [(SM,R,RO),(SM,R,CS),(RC,R,PRA)], "list"),
("The dress follows the tech, which follows the Get-In.", [(TR,P,DR),(GI,P,TR)], "relative_clause"),
("Wardrobe's quick-change booth is part of the Main Stage, but Wardrobe itself is not.", [], "negation"),
("The Eos desk sits in the lighting box, which Front of House owns for fire-safety purposes.", [], "relative_clause"),
("The Get-In, which on a big show means three days of trucks backed up at the Loading Dock, a dozen casual crew, the Scenic Workshop's flats coming through in running order and Wardrobe queuing behind them with rails, requires a signed Production Risk Assessment.", [(GI,R,PRA)], "distant"),
("The Box Office runs late on press nights, which is why FOH runs the door check itself.", [], "trap"),
("Stage Management replaced two people on the Lighting Crew last season.", [], "trap"),
("The Technical Rehearsal requires Eos and is signed off by the TD, whose office is next to the Paint Frame.", [(TR,R,EOS),(TR,SO,TD)], "coordination"),
("Riggers follow the Running Order during the Get-Out.", [], "trap"),
("The tech follows the Cue Sheet line by line.", [], "trap"),
("The Fire Warden, as part of the evening routine, checks the Loading Dock doors.", [], "trap"),
("The Production Manager signs off the Show Report that Stage Management owns, not the Prompt Book.", [(SR,SO,PM),(SR,O,SM)], "relative_clause"),
("Both the Fly Floor and the Paint Frame are part of the 1962 extension.", [], "coordination"),
("The Manual Booking Ledger, like the Strand 520 Desk, was superseded years ago.", [], "coordination"),
("The Cue Sheet is needed by the Lighting Crew and updated by the DSM.", [(LX,R,CS)], "passive"),
("Spektrix is relied on by both the Box Office and Front of House.", [(BO,R,SPX),(FOH,R,SPX)], "passive"),
("The Prompt Book is kept in Rehearsal Room B and is owned by the DSM.", [(PB,O,DSM)], "passive"),
("The Technical Director is followed around by the Production Manager for the whole of the tech.", [], "trap"),
("Once the scene shop has finished the flats, they are owned by Stage Management until the Get-Out.", [], "trap"),
("The PRA covers the Fly Floor, the Paint Frame and the Loading Dock, and the PM signs it off.", [(PRA,SO,PM)], "list"),
("Wardrobe, like every team, is part of the reason the dress runs long, but the dress itself is run by the DSM.", [(DR,O,DSM)], "wrong_pair"),
("The riggers, who need the Fly Floor clear, also look after the fly system.", [(RC,R,FF),(FLY,O,RC)], "relative_clause"),
("The House Manager needs the Show Report only on nights when the Fire Warden reports an incident.", [], "conditional"),
("Unlike the Get-Out, the Get-In requires the Production Risk Assessment and is signed off by the PM.", [(GI,R,PRA),(GI,SO,PM)], "wrong_pair"),
("The Rigging Inspection is signed off by the TD, and the Rigging Crew keeps the paperwork in the Workshop.", [(RI,SO,TD)], "coordination"),
("Three things precede the first preview: the tech, the dress and a Fire Curtain Test witnessed by the Fire Warden.", [], "list"),
("The LOLER check does not depend on the sparks or the Eos desk.", [], "negation"),
("The Fire Curtain Test, which the warden has to fit in after the Lighting Crew have finished focusing, before the Box Office opens the doors and usually while Wardrobe are still steaming costumes on the Main Stage, precedes Front of House Clearance.", [(FCT,P,FOHC)], "distant"),
("The Show Report follows a template that the DSM owns.", [], "trap"),
("Front of House Clearance, which the House Manager signs off, comes after the Fire Curtain Test.", [(FOHC,SO,HM),(FCT,P,FOHC)], "relative_clause"),
("Sparks rely on the DSM's calls, and the Cue Sheet they work from is part of the Prompt Book.", [(CS,PO,PB)], "wrong_pair"),
# ---- negation / conditional / history / plan / hedge / question: gold [] ----
("The Box Office does not own the Manual Booking Ledger any more.", [], "negation"),
("Wardrobe never needs the Eos desk.", [], "negation"),
("The dress does not require the Fly Floor to be staffed.", [], "negation"),
("The Rigging Inspection is not part of the Get-Out.", [], "negation"),
("The House Manager doesn't sign off the Fire Curtain Test.", [], "negation"),
("If the tech overruns, the Dress Rehearsal needs a reissued Running Order.", [], "conditional"),
("When a touring company brings its own desk, the Technical Rehearsal requires their operator rather than the Eos desk.", [], "conditional"),
("Should the Loading Dock be blocked, the Get-In would depend on the Scenic Workshop's side door.", [], "conditional"),
("If the Fire Warden is absent, the Technical Director signs off the Fire Curtain Test.", [], "conditional"),
("Before 2019, the Box Office owned the Manual Booking Ledger.", [], "history"),
("The Strand 520 Desk used to be maintained by the Lighting Crew.", [], "history"),
("Until last year the Running Order was part of the Prompt Book.", [], "history"),
("In the old building, Rehearsal Room B was part of the Scenic Workshop.", [], "history"),
("The Get-In used to come after the Rigging Inspection.", [], "history"),
("Next season, Spektrix will replace the paper door lists that Front of House prints.", [], "plan"),
("The Production Manager is planned to take over ownership of the Counterweight Fly System in 2027.", [], "plan"),
("Wardrobe will need Rehearsal Room B for fittings from March.", [], "plan"),
("We intend for the Show Report to be signed off by the House Manager as well.", [], "plan"),
("The Cue Sheet is probably owned by the Lighting Crew, but check with the DSM.", [], "trap"),
("We think the Rigging Inspection needs sign-off from the Production Manager too.", [], "trap"),
("The dress might depend on the Fly Floor being cleared, depending on the show.", [], "trap"),
("Does the Get-Out require the Production Risk Assessment?", [], "question"),
("Who owns Rehearsal Room B — Stage Management or Wardrobe?", [], "question"),
("Is the Fire Curtain Test part of the Front of House Clearance?", [], "question"),
("Has Eos replaced the Strand 520 Desk in the studio yet?", [], "question"),
("Between 2015 and 2018 the Technical Rehearsal was signed off by the Production Manager.", [], "history"),
("Ideally the Get-Out would precede the Paint Frame clean-down, but it rarely does.", [], "plan"),
]

REL = [
 {"name":"requires","inverse":"required_by","description":"From cannot proceed or function without To (a standing dependency, not a one-off need).",
  "phrases":["requires","needs","depends on","relies on","cannot start without","calls for"],
  "inverse_phrases":["is required by","is needed by","is needed for","is relied on by","is a prerequisite for"]},
 {"name":"owned_by","inverse":"owns","description":"From is owned, run, maintained or held responsible by To.",
  "phrases":["is owned by","belongs to","is maintained by","is run by","is the responsibility of"],
  "inverse_phrases":["owns","maintains","runs","looks after","is responsible for"]},
 {"name":"precedes","inverse":"follows","description":"From happens before To in the standing order of work.",
  "phrases":["precedes","comes before","happens before","is followed by","then"],
  "inverse_phrases":["follows","comes after","happens after","only after"]},
 {"name":"part_of","inverse":"has_part","description":"From is a component, section, sub-team or sub-area of To.",
  "phrases":["is part of","sits inside","sits within","is a section of","is included in"],
  "inverse_phrases":["includes","contains","comprises","is made up of"]},
 {"name":"supersedes","inverse":"superseded_by","description":"From replaced To, which is retired or legacy.",
  "phrases":["supersedes","superseded","replaces","replaced","took over from"],
  "inverse_phrases":["is superseded by","was superseded by","was replaced by","is replaced by"]},
 {"name":"signed_off_by","inverse":"signs_off","description":"Domain relation: From (a procedure, document or system) must be signed off / approved by To (a role or team) before it counts as complete.",
  "phrases":["is signed off by","needs sign-off from","is approved by","requires sign-off from"],
  "inverse_phrases":["signs off","approves","gives sign-off for"]},
]

titles = {t for t,_,_ in E}
relnames = {r["name"] for r in REL}
CUES = set("negation conditional history plan question trap list relative_clause passive distant coordination wrong_pair".split())
out_s = []
errs = []
seen = set()
for text, gold, cue in S_:
    if text in seen: errs.append("dup "+text)
    seen.add(text)
    for a,r,b in gold:
        if a not in titles: errs.append(f"bad title {a!r} in {text}")
        if b not in titles: errs.append(f"bad title {b!r} in {text}")
        if r not in relnames: errs.append(f"bad rel {r} in {text}")
        if a == b: errs.append("self "+text)
    if cue is not None and cue not in CUES: errs.append("bad cue "+text)
    d = {"text": text, "gold": [list(g) for g in gold]}
    if cue: d["cue"] = cue
    out_s.append(d)
# every sentence should mention >=1 entry by title or alias (rough check, case-insensitive substring)
import re
for d in out_s:
    low = d["text"].lower()
    hits = [t for t,al,_ in E if any(re.search(r'(?<![a-z])'+re.escape(n.lower())+r'(?![a-z])', low) for n in [t]+al)]
    d_hits = len(hits)
    if d_hits < 2: errs.append(f"<2 entries ({hits}): {d['text']}")
    for a,_,b in d["gold"]:
        for t in (a,b):
            if t not in hits: errs.append(f"gold title {t} not mentioned: {d['text']}")
doc = {
 "domain": "Theatre production company (fictional Harrowgate Civic Theatre): stage management, crews, front of house, rehearsals, safety procedures, production paperwork.",
 "note": "Every sentence hand-written by an engineer who never saw the product's code, prompts or tuning data. Gold = only relations the sentence asserts as currently true, canonical direction, entry titles. Hedges are tagged cue 'trap' (no 'hedge' value in the schema). See README.md.",
 "relations": REL,
 "entries": [{"title":t,"aliases":a,"kind":k} for t,a,k in E],
 "sentences": out_s,
}
if errs:
    print("\n".join(errs))
json.dump(doc, open("/work/blind_out/extraction_set2/extraction_set2.json","w"), indent=1, ensure_ascii=False)
from collections import Counter
print("entries", len(E), "sentences", len(out_s))
print("gold nonempty", sum(1 for d in out_s if d["gold"]), "empty", sum(1 for d in out_s if not d["gold"]), "triples", sum(len(d["gold"]) for d in out_s))
c = Counter(d.get("cue","(none)") for d in out_s); print(sorted(c.items()))
c2 = Counter((d.get("cue","(none)"), bool(d["gold"])) for d in out_s); print(sorted(c2.items()))
print(Counter(g[1] for d in out_s for g in d["gold"]))
