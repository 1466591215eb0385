#!/usr/bin/env python3
"""Blind relation-extraction set 6: film post-production house ("Lanternfield Post").

All entries, aliases, relations, sentences and gold triples below were written by hand.
This script only checks them and writes extraction_set6.json next to itself.
Stdlib only.  Usage: python3 build.py
"""
import json
import os
import re
import sys
from collections import Counter

DOMAIN = "film_post_production"
NOTE = (
    "Lanternfield Post, a made-up film and TV post-production house. Hand-written blind set; "
    "gold holds only what a sentence states as currently true, in canonical direction, using "
    "entry titles. The cue field is optional extra information."
)

ALLOWED_KINDS = {"team", "role", "system", "document", "procedure", "place", "vendor"}
ALLOWED_CUES = {
    None, "relative_clause", "wrong_pair", "coordination", "list", "passive", "distant",
    "trap", "negation", "conditional", "history", "plan", "question",
}

RELATIONS = [
    {
        "name": "requires",
        "inverse": "required_by",
        "description": "A procedure, system or vendor cannot do its work without another entry "
                       "(a document, system, place or earlier output).",
        "phrases": ["requires", "needs", "depends on", "relies on", "runs on", "runs in",
                    "can't start without", "won't work without"],
        "inverse_phrases": ["is required by", "is needed by", "is a prerequisite for",
                            "has to be in place for"],
    },
    {
        "name": "owned_by",
        "inverse": "owns",
        "description": "A team or role is accountable for a procedure, system, document or place.",
        "phrases": ["is owned by", "belongs to", "is the responsibility of", "is run by"],
        "inverse_phrases": ["owns", "is responsible for", "is the owner of", "looks after"],
    },
    {
        "name": "precedes",
        "inverse": "follows",
        "description": "One procedure happens before another in the post pipeline.",
        "phrases": ["precedes", "comes before", "happens before", "is done before", "then"],
        "inverse_phrases": ["follows", "comes after", "starts after", "starts once",
                            "is followed by"],
    },
    {
        "name": "part_of",
        "inverse": "has_part",
        "description": "An entry is a component or member of a larger one: a role in a team, a "
                       "team in a team, a document inside a package, a room in a building.",
        "phrases": ["is part of", "sits in", "sits within", "is a member of", "forms part of",
                    "is an appendix to"],
        "inverse_phrases": ["includes", "contains", "houses", "is made up of"],
    },
    {
        "name": "supersedes",
        "inverse": "superseded_by",
        "description": "A newer system or document replaced an older one, and the replacement "
                       "holds now.",
        "phrases": ["supersedes", "replaced", "has replaced", "took over from"],
        "inverse_phrases": ["was superseded by", "was replaced by", "has been replaced by"],
    },
    {
        "name": "reviewed_by",
        "inverse": "reviews",
        "description": "A role or team checks a document, cut, deliverable or procedure's output "
                       "(a review, not ownership and not a prerequisite).",
        "phrases": ["is reviewed by", "is checked by", "goes to ... for review",
                    "goes through ... for review"],
        "inverse_phrases": ["reviews", "checks", "looks over", "goes over"],
    },
]

# (title, kind, aliases)
ENTRIES = [
    # teams
    ("Editorial Team", "team", ["Editorial", "edit team", "cutting room"]),
    ("Online Editorial", "team", ["Online", "finishing team"]),
    ("Colour Department", "team", ["Colour", "grading team", "the colourists"]),
    ("Sound Department", "team", ["Sound", "audio team"]),
    ("VFX Team", "team", ["VFX", "visual effects"]),
    ("Data Management", "team", ["data team", "Data Ops"]),
    ("IT Support", "team", ["IT team", "helpdesk"]),
    # roles
    ("Post Supervisor", "role", ["post super", "Post Production Supervisor"]),
    ("Post Producer", "role", ["producer"]),
    ("Assistant Editor", "role", ["AE", "first assistant"]),
    ("Senior Colourist", "role", ["lead colourist", "colourist"]),
    ("Re-recording Mixer", "role", ["dubbing mixer", "mixer"]),
    ("QC Operator", "role", ["QC op"]),
    # systems
    ("Avid Media Composer", "system", ["Avid", "Media Composer"]),
    ("DaVinci Resolve", "system", ["Resolve"]),
    ("Lustre Suite", "system", ["Lustre", "the old grading system"]),
    ("Pro Tools", "system", ["ProTools"]),
    ("Nexis Storage", "system", ["Nexis", "shared storage"]),
    ("LTO Archive", "system", ["LTO", "tape archive"]),
    ("Aspera Transfer", "system", ["Aspera"]),
    ("Legacy FTP Server", "system", ["FTP server", "old FTP"]),
    ("Shot Tracker", "system", ["ShotGrid", "tracker"]),
    ("VFX Spreadsheet", "system", ["shot spreadsheet"]),
    ("ReviewHub", "system", ["review portal", "the portal"]),
    # documents
    ("Edit Decision List", "document", ["EDL"]),
    ("Turnover Package", "document", ["turnover", "turnover pack"]),
    ("Music Cue Sheet", "document", ["cue sheet", "music cues"]),
    ("Colour Management Spec", "document", ["colour spec", "CM spec"]),
    ("QC Report", "document", ["QC sheet"]),
    ("Delivery Schedule", "document", ["delivery spec", "deliverables schedule"]),
    ("Deliverables Package", "document", ["delivery package", "final package"]),
    # procedures
    ("Dailies Processing", "procedure", ["dailies", "rushes"]),
    ("Offline Edit", "procedure", ["offline", "offline cut"]),
    ("Picture Lock", "procedure", ["lock", "locked cut"]),
    ("Conform", "procedure", ["online conform", "the conform"]),
    ("Colour Grade", "procedure", ["grade", "grading"]),
    ("Final Mix", "procedure", ["mix", "the dub"]),
    ("Final QC", "procedure", ["QC", "quality control"]),
    ("Deliverables Mastering", "procedure", ["mastering", "IMF mastering"]),
    ("Archive Backup", "procedure", ["backup", "LTO backup"]),
    # places
    ("Wharf Street Building", "place", ["Wharf Street", "the main building"]),
    ("Grading Theatre", "place", ["Theatre 1", "grading suite"]),
    ("Dubbing Stage", "place", ["Stage 2", "dub stage"]),
    ("Machine Room", "place", ["MCR", "server room"]),
    # vendors
    ("Northlight Subtitling", "vendor", ["Northlight", "subtitle vendor"]),
]

# (text, gold triples [from title, relation, to title], cue)
SENTENCES = [
    # ---------------------------------------------------------------- plain, no cue
    ("Data Management owns Dailies Processing.",
     [["Dailies Processing", "owned_by", "Data Management"]], None),
    ("The Offline Edit starts once Dailies Processing has finished for the day.",
     [["Dailies Processing", "precedes", "Offline Edit"]], None),
    ("Picture Lock comes before the conform.",
     [["Picture Lock", "precedes", "Conform"]], None),
    ("The Senior Colourist owns the grade on every feature we take in.",
     [["Colour Grade", "owned_by", "Senior Colourist"]], None),
    ("Colour Grade requires the Colour Management Spec.",
     [["Colour Grade", "requires", "Colour Management Spec"]], None),
    ("DaVinci Resolve replaced Lustre in 2022.",
     [["DaVinci Resolve", "supersedes", "Lustre Suite"]], None),
    ("Aspera has replaced the old FTP for every client transfer.",
     [["Aspera Transfer", "supersedes", "Legacy FTP Server"]], None),
    ("Shot Tracker supersedes the shot spreadsheet.",
     [["Shot Tracker", "supersedes", "VFX Spreadsheet"]], None),
    ("The Assistant Editor reviews each turnover pack before it is sent out.",
     [["Turnover Package", "reviewed_by", "Assistant Editor"]], None),
    ("The Re-recording Mixer sits in the Sound Department.",
     [["Re-recording Mixer", "part_of", "Sound Department"]], None),
    ("IT Support owns the Machine Room.",
     [["Machine Room", "owned_by", "IT Support"]], None),
    ("The Final Mix needs the Dubbing Stage for three full days.",
     [["Final Mix", "requires", "Dubbing Stage"]], None),
    ("Mastering follows Final QC.",
     [["Final QC", "precedes", "Deliverables Mastering"]], None),
    ("Online Editorial is responsible for the conform.",
     [["Conform", "owned_by", "Online Editorial"]], None),
    ("The EDL is part of the turnover pack.",
     [["Edit Decision List", "part_of", "Turnover Package"]], None),
    ("The Post Producer owns the Delivery Schedule.",
     [["Delivery Schedule", "owned_by", "Post Producer"]], None),
    ("Pro Tools belongs to the Sound Department.",
     [["Pro Tools", "owned_by", "Sound Department"]], None),
    ("The Offline Edit runs on Avid Media Composer.",
     [["Offline Edit", "requires", "Avid Media Composer"]], None),
    ("The lead colourist looks over the colour spec at the start of every project.",
     [["Colour Management Spec", "reviewed_by", "Senior Colourist"]], None),
    ("The QC Operator is a member of Data Management.",
     [["QC Operator", "part_of", "Data Management"]], None),
    ("Colour Department owns the Grading Theatre.",
     [["Grading Theatre", "owned_by", "Colour Department"]], None),
    ("Archive Backup depends on the LTO Archive.",
     [["Archive Backup", "requires", "LTO Archive"]], None),
    ("After the conform, the picture goes to the grade.",
     [["Conform", "precedes", "Colour Grade"]], None),
    ("Dailies Processing runs in DaVinci Resolve.",
     [["Dailies Processing", "requires", "DaVinci Resolve"]], None),
    ("DaVinci Resolve depends on Nexis Storage for all project media.",
     [["DaVinci Resolve", "requires", "Nexis Storage"]], None),
    ("Avid needs Nexis mounted on every edit bay.",
     [["Avid Media Composer", "requires", "Nexis Storage"]], None),
    ("Data Ops is the owner of Aspera Transfer.",
     [["Aspera Transfer", "owned_by", "Data Management"]], None),
    ("The Machine Room is part of the main building at Wharf Street.",
     [["Machine Room", "part_of", "Wharf Street Building"]], None),
    ("Final Mix precedes Final QC.",
     [["Final Mix", "precedes", "Final QC"]], None),
    ("Deliverables Mastering requires the QC Report.",
     [["Deliverables Mastering", "requires", "QC Report"]], None),
    ("Northlight Subtitling needs the locked cut to start timing subtitles.",
     [["Northlight Subtitling", "requires", "Picture Lock"]], None),
    ("Nexis Storage is looked after by the IT team, who own it outright.",
     [["Nexis Storage", "owned_by", "IT Support"]], None),
    ("Final QC requires the Delivery Schedule, since that lists every technical spec.",
     [["Final QC", "requires", "Delivery Schedule"]], None),
    ("The Sound Department owns the Final Mix.",
     [["Final Mix", "owned_by", "Sound Department"]], None),
    ("The Assistant Editor is part of the Editorial Team.",
     [["Assistant Editor", "part_of", "Editorial Team"]], None),
    ("Online Editorial sits within the Editorial Team.",
     [["Online Editorial", "part_of", "Editorial Team"]], None),
    ("The colour spec is an appendix to the Delivery Schedule.",
     [["Colour Management Spec", "part_of", "Delivery Schedule"]], None),
    ("Every morning, Dailies Processing precedes the first Offline Edit session.",
     [["Dailies Processing", "precedes", "Offline Edit"]], None),
    ("After 6pm the QC Operator reviews the Deliverables Package on the night shift.",
     [["Deliverables Package", "reviewed_by", "QC Operator"]], None),
    ("Offline Edit comes before Picture Lock, obviously.",
     [["Offline Edit", "precedes", "Picture Lock"]], None),
    ("Handover note: the Assistant Editor owns the Turnover Package from now on.",
     [["Turnover Package", "owned_by", "Assistant Editor"]], None),
    ("Colour looks after the CM spec.",
     [["Colour Management Spec", "owned_by", "Colour Department"]], None),
    ("The dub stage belongs to Sound.",
     [["Dubbing Stage", "owned_by", "Sound Department"]], None),
    ("On Fridays the Post Supervisor goes over the Delivery Schedule line by line.",
     [["Delivery Schedule", "reviewed_by", "Post Supervisor"]], None),

    # ---------------------------------------------------------------- passive
    ("The Colour Grade is followed by Final QC.",
     [["Colour Grade", "precedes", "Final QC"]], "passive"),
    ("The Music Cue Sheet is reviewed by the Post Producer before delivery.",
     [["Music Cue Sheet", "reviewed_by", "Post Producer"]], "passive"),
    ("The QC Report is owned by the QC op.",
     [["QC Report", "owned_by", "QC Operator"]], "passive"),
    ("The Edit Decision List is owned by the Assistant Editor.",
     [["Edit Decision List", "owned_by", "Assistant Editor"]], "passive"),
    ("Archive Backup is run by Data Management.",
     [["Archive Backup", "owned_by", "Data Management"]], "passive"),
    ("Shot Tracker is owned by the VFX Team.",
     [["Shot Tracker", "owned_by", "VFX Team"]], "passive"),
    ("Lustre was superseded by DaVinci Resolve when we rebuilt Theatre 1.",
     [["DaVinci Resolve", "supersedes", "Lustre Suite"]], "passive"),
    ("The old FTP has been replaced by Aspera.",
     [["Aspera Transfer", "supersedes", "Legacy FTP Server"]], "passive"),
    ("The EDL is checked by the first assistant before turnover.",
     [["Edit Decision List", "reviewed_by", "Assistant Editor"]], "passive"),
    ("The offline cut is reviewed by the Post Supervisor every Thursday.",
     [["Offline Edit", "reviewed_by", "Post Supervisor"]], "passive"),

    # ---------------------------------------------------------------- relative clauses
    ("The conform, which Online Editorial owns, needs the EDL and Nexis.",
     [["Conform", "owned_by", "Online Editorial"],
      ["Conform", "requires", "Edit Decision List"],
      ["Conform", "requires", "Nexis Storage"]], "relative_clause"),
    ("The Dubbing Stage, which belongs to the Sound Department, is part of the Wharf Street Building.",
     [["Dubbing Stage", "owned_by", "Sound Department"],
      ["Dubbing Stage", "part_of", "Wharf Street Building"]], "relative_clause"),
    ("The QC Operator, who is part of Data Management, owns Final QC.",
     [["QC Operator", "part_of", "Data Management"],
      ["Final QC", "owned_by", "QC Operator"]], "relative_clause"),
    ("The grade, which follows the conform, is owned by the Senior Colourist.",
     [["Conform", "precedes", "Colour Grade"],
      ["Colour Grade", "owned_by", "Senior Colourist"]], "relative_clause"),
    ("Shot Tracker, which the VFX Team owns, replaced the shot spreadsheet last spring.",
     [["Shot Tracker", "owned_by", "VFX Team"],
      ["Shot Tracker", "supersedes", "VFX Spreadsheet"]], "relative_clause"),
    ("Resolve, which replaced Lustre, needs Nexis Storage.",
     [["DaVinci Resolve", "supersedes", "Lustre Suite"],
      ["DaVinci Resolve", "requires", "Nexis Storage"]], "relative_clause"),
    ("The Turnover Package that the Assistant Editor owns includes the EDL.",
     [["Turnover Package", "owned_by", "Assistant Editor"],
      ["Edit Decision List", "part_of", "Turnover Package"]], "relative_clause"),
    ("Final QC, which comes after the Final Mix, requires the Delivery Schedule.",
     [["Final Mix", "precedes", "Final QC"],
      ["Final QC", "requires", "Delivery Schedule"]], "relative_clause"),
    ("The Music Cue Sheet, which the Post Producer reviews, is part of the Deliverables Package.",
     [["Music Cue Sheet", "reviewed_by", "Post Producer"],
      ["Music Cue Sheet", "part_of", "Deliverables Package"]], "relative_clause"),
    ("Aspera, which Data Management owns, is the tool that replaced the old FTP.",
     [["Aspera Transfer", "owned_by", "Data Management"],
      ["Aspera Transfer", "supersedes", "Legacy FTP Server"]], "relative_clause"),
    ("The Machine Room, where the IT team keep the Nexis heads, is owned by IT Support.",
     [["Machine Room", "owned_by", "IT Support"]], "relative_clause"),
    ("The EDL that Northlight asked about last week is the one in the turnover folder.",
     [], "relative_clause"),

    # ---------------------------------------------------------------- wrong pair
    ("Data Management hands the rushes to the Editorial Team, which owns the Offline Edit.",
     [["Offline Edit", "owned_by", "Editorial Team"]], "wrong_pair"),
    ("The Post Supervisor reviews the QC Report that the QC Operator owns.",
     [["QC Report", "reviewed_by", "Post Supervisor"],
      ["QC Report", "owned_by", "QC Operator"]], "wrong_pair"),
    ("The Senior Colourist asked the Assistant Editor for the EDL, which the conform requires.",
     [["Conform", "requires", "Edit Decision List"]], "wrong_pair"),
    ("Sound told VFX that Pro Tools needs Nexis.",
     [["Pro Tools", "requires", "Nexis Storage"]], "wrong_pair"),
    ("The Post Supervisor chose Northlight Subtitling; the Post Producer owns the Music Cue Sheet.",
     [["Music Cue Sheet", "owned_by", "Post Producer"]], "wrong_pair"),
    ("Colour sends the graded master to Online Editorial, who own mastering.",
     [["Deliverables Mastering", "owned_by", "Online Editorial"]], "wrong_pair"),
    ("The Final Mix on the Dubbing Stage needs the music cues from the Post Producer.",
     [["Final Mix", "requires", "Music Cue Sheet"]], "wrong_pair"),
    ("IT Support racked the new drives in the Machine Room for Data Management, who own the LTO Archive.",
     [["LTO Archive", "owned_by", "Data Management"]], "wrong_pair"),
    ("Editorial asked the VFX Team to log every shot in Shot Tracker, which VFX owns.",
     [["Shot Tracker", "owned_by", "VFX Team"]], "wrong_pair"),
    ("The Post Producer signs off the budget, but it is the QC Operator who reviews the final package.",
     [["Deliverables Package", "reviewed_by", "QC Operator"]], "wrong_pair"),
    ("Northlight Subtitling asked the Post Supervisor who owns the Delivery Schedule.",
     [], "wrong_pair"),

    # ---------------------------------------------------------------- coordination
    ("Dailies Processing requires Nexis Storage and DaVinci Resolve.",
     [["Dailies Processing", "requires", "Nexis Storage"],
      ["Dailies Processing", "requires", "DaVinci Resolve"]], "coordination"),
    ("The Sound Department owns Pro Tools and the Dubbing Stage.",
     [["Pro Tools", "owned_by", "Sound Department"],
      ["Dubbing Stage", "owned_by", "Sound Department"]], "coordination"),
    ("Conform and Deliverables Mastering are both owned by Online Editorial.",
     [["Conform", "owned_by", "Online Editorial"],
      ["Deliverables Mastering", "owned_by", "Online Editorial"]], "coordination"),
    ("The Senior Colourist and the Post Producer both review the colour spec.",
     [["Colour Management Spec", "reviewed_by", "Senior Colourist"],
      ["Colour Management Spec", "reviewed_by", "Post Producer"]], "coordination"),
    ("Resolve replaced Lustre and Aspera replaced the FTP server.",
     [["DaVinci Resolve", "supersedes", "Lustre Suite"],
      ["Aspera Transfer", "supersedes", "Legacy FTP Server"]], "coordination"),
    ("The Grading Theatre and Stage 2 are both part of Wharf Street.",
     [["Grading Theatre", "part_of", "Wharf Street Building"],
      ["Dubbing Stage", "part_of", "Wharf Street Building"]], "coordination"),
    ("The QC Report and the Deliverables Package both go through the Post Supervisor for review.",
     [["QC Report", "reviewed_by", "Post Supervisor"],
      ["Deliverables Package", "reviewed_by", "Post Supervisor"]], "coordination"),
    ("The Assistant Editor owns the EDL and reviews the turnover pack.",
     [["Edit Decision List", "owned_by", "Assistant Editor"],
      ["Turnover Package", "reviewed_by", "Assistant Editor"]], "coordination"),
    ("The conform and the Final Mix both start after Picture Lock.",
     [["Picture Lock", "precedes", "Conform"],
      ["Picture Lock", "precedes", "Final Mix"]], "coordination"),
    ("The Re-recording Mixer is in the Sound Department and the QC op is in Data Management.",
     [["Re-recording Mixer", "part_of", "Sound Department"],
      ["QC Operator", "part_of", "Data Management"]], "coordination"),
    ("Editorial and Sound both complained about Nexis and Aspera this week.",
     [], "coordination"),

    # ---------------------------------------------------------------- lists
    ("The pipeline runs: Dailies Processing, Offline Edit, Picture Lock, Conform, Colour Grade.",
     [["Dailies Processing", "precedes", "Offline Edit"],
      ["Offline Edit", "precedes", "Picture Lock"],
      ["Picture Lock", "precedes", "Conform"],
      ["Conform", "precedes", "Colour Grade"]], "list"),
    ("Data Management owns three things: Dailies Processing, Archive Backup and Aspera.",
     [["Dailies Processing", "owned_by", "Data Management"],
      ["Archive Backup", "owned_by", "Data Management"],
      ["Aspera Transfer", "owned_by", "Data Management"]], "list"),
    ("The Deliverables Package contains the QC Report, the Music Cue Sheet and the IMF itself.",
     [["QC Report", "part_of", "Deliverables Package"],
      ["Music Cue Sheet", "part_of", "Deliverables Package"]], "list"),
    ("Things the conform needs: the EDL, Nexis, and a locked cut.",
     [["Conform", "requires", "Edit Decision List"],
      ["Conform", "requires", "Nexis Storage"],
      ["Conform", "requires", "Picture Lock"]], "list"),
    ("The Wharf Street Building houses the Machine Room, the Grading Theatre and the Dubbing Stage.",
     [["Machine Room", "part_of", "Wharf Street Building"],
      ["Grading Theatre", "part_of", "Wharf Street Building"],
      ["Dubbing Stage", "part_of", "Wharf Street Building"]], "list"),
    ("Order for the last week: Final QC, then mastering, then the LTO backup.",
     [["Final QC", "precedes", "Deliverables Mastering"],
      ["Deliverables Mastering", "precedes", "Archive Backup"]], "list"),
    ("Colour Department members: the Senior Colourist, two assists and a DIT.",
     [["Senior Colourist", "part_of", "Colour Department"]], "list"),
    ("Owners, for the record. Nexis: IT Support; Shot Tracker: VFX Team; ReviewHub: Post Supervisor.",
     [["Nexis Storage", "owned_by", "IT Support"],
      ["Shot Tracker", "owned_by", "VFX Team"],
      ["ReviewHub", "owned_by", "Post Supervisor"]], "list"),
    ("Tools on the approved list: Avid, Resolve, Pro Tools, Aspera and ReviewHub.",
     [], "list"),

    # ---------------------------------------------------------------- distant
    ("Final QC, after a long argument last month about who should be on call over the holidays "
     "and which freelancers to keep, now belongs to the QC Operator.",
     [["Final QC", "owned_by", "QC Operator"]], "distant"),
    ("Archive Backup (and this trips up new starters every single time, because the tapes all "
     "look identical) needs the LTO Archive.",
     [["Archive Backup", "requires", "LTO Archive"]], "distant"),
    ("The Colour Management Spec, first drafted by a freelancer in 2019 and rewritten twice since, "
     "is reviewed by the Senior Colourist.",
     [["Colour Management Spec", "reviewed_by", "Senior Colourist"]], "distant"),
    ("Picture Lock, which on this show slipped twice because of reshoots and a late change of "
     "composer, is owned by the Post Producer.",
     [["Picture Lock", "owned_by", "Post Producer"]], "distant"),
    ("Dailies Processing, as anyone who has done a night shift in the Machine Room will tell you, "
     "comes before the Offline Edit.",
     [["Dailies Processing", "precedes", "Offline Edit"]], "distant"),

    # ---------------------------------------------------------------- negation (mixed: keep positive)
    ("Colour Grade can't start without the Grading Theatre.",
     [["Colour Grade", "requires", "Grading Theatre"]], "negation"),
    ("IT Support owns Nexis and the Machine Room but not the LTO Archive.",
     [["Nexis Storage", "owned_by", "IT Support"],
      ["Machine Room", "owned_by", "IT Support"]], "negation"),
    ("The conform isn't owned by the Editorial Team; Online Editorial owns it.",
     [["Conform", "owned_by", "Online Editorial"]], "negation"),
    # negation, gold []
    ("The Post Producer does not own the Final Mix.", [], "negation"),
    ("Avid does not need Aspera.", [], "negation"),
    ("Neither Avid nor Pro Tools depends on the LTO Archive.", [], "negation"),
    ("The QC Report is never reviewed by the Assistant Editor.", [], "negation"),
    ("Shot Tracker isn't part of ReviewHub, whatever the login page suggests.", [], "negation"),
    ("The Final Mix does not come before the conform.", [], "negation"),
    ("The Grading Theatre is not owned by IT Support.", [], "negation"),
    ("Northlight Subtitling does not require the EDL.", [], "negation"),
    ("Nobody in Data Management owns the Colour Management Spec.", [], "negation"),
    ("No one on the Editorial Team reviews the Music Cue Sheet.", [], "negation"),

    # ---------------------------------------------------------------- conditional, gold []
    ("If Nexis is down, the conform would require the local copy on the Avid.", [], "conditional"),
    ("Should the Senior Colourist be off sick, the Post Supervisor would review the colour spec.",
     [], "conditional"),
    ("In case Aspera fails, the old FTP could replace it for a day.", [], "conditional"),
    ("Unless the Post Producer objects, Online Editorial owns the final package from Friday.",
     [], "conditional"),
    ("Provided that the Post Supervisor agrees, the Final Mix can be reviewed by the Post Producer instead.",
     [], "conditional"),
    ("When a reel fails QC, the QC Report is reviewed by the Post Producer as well.",
     [], "conditional"),
    ("In the event of a Machine Room outage, IT Support would own the Archive Backup until "
     "Data Management is back.", [], "conditional"),
    ("If the client asks for HDR, the Colour Grade would require a second colour spec.",
     [], "conditional"),
    ("Should Pro Tools crash mid-session, the Final Mix could run on Avid Media Composer as a stopgap.",
     [], "conditional"),
    ("If the EDL is wrong, the Assistant Editor should review the turnover pack again.",
     [], "conditional"),
    ("Northlight Subtitling would need the Music Cue Sheet if the broadcaster asked for lyric subtitles.",
     [], "conditional"),
    ("Were the Dubbing Stage flooded again, Sound would take over the Grading Theatre.",
     [], "conditional"),
    ("Unless Data Ops object, Shot Tracker could replace ReviewHub for VFX notes.", [], "conditional"),
    ("When the QC Operator is on leave, Final QC is owned by the Post Supervisor.", [], "conditional"),

    # ---------------------------------------------------------------- plan, gold []
    ("Shot Tracker will replace ReviewHub for VFX notes next quarter.", [], "plan"),
    ("Data Management is due to take ownership of ReviewHub in January.", [], "plan"),
    ("We plan to have the QC Operator review every QC Report from next month.", [], "plan"),
    ("From next quarter the conform will run in DaVinci Resolve rather than Avid.", [], "plan"),
    ("Northlight Subtitling will need Aspera access once the new contract starts.", [], "plan"),
    ("The Post Producer intends to hand the Delivery Schedule over to the Post Supervisor in the new year.",
     [], "plan"),
    ("On the next documentary the Final Mix is scheduled to precede the conform, as an experiment.",
     [], "plan"),
    ("Resolve is slated to replace Avid for the offline by 2028.", [], "plan"),
    ("The Assistant Editor will own the Music Cue Sheet on the next series.", [], "plan"),

    # ---------------------------------------------------------------- history, gold []
    ("Lustre used to be owned by IT Support.", [], "history"),
    ("The grade used to come before the conform.", [], "history"),
    ("Until last year, the VFX Team owned ReviewHub.", [], "history"),
    ("Previously the Post Producer reviewed the QC Report herself.", [], "history"),
    ("Before Aspera, Northlight Subtitling needed the old FTP.", [], "history"),
    ("Dailies Processing is no longer owned by the Editorial Team.", [], "history"),
    ("Back in 2021 the Sound Department owned the Grading Theatre as well.", [], "history"),
    ("The shot spreadsheet was part of the Turnover Package until VFX moved everything to the tracker.",
     [], "history"),
    ("Pro Tools used to run off Nexis before the dub stage got its own storage.", [], "history"),

    # ---------------------------------------------------------------- questions, gold []
    ("Who owns the Delivery Schedule now that the Post Producer has left?", [], "question"),
    ("Does the conform need the EDL or just the AAF?", [], "question"),
    ("Is the QC Operator part of Data Management or Online Editorial?", [], "question"),
    ("Has Shot Tracker actually replaced the shot spreadsheet yet?", [], "question"),
    ("Can someone confirm whether Final QC comes before or after the Final Mix?", [], "question"),

    # ---------------------------------------------------------------- traps and hedges, gold []
    ("All grades must conform to the Colour Management Spec.", [], "trap"),
    ("Please lock the Machine Room door when you leave.", [], "trap"),
    ("Dealing with the Delivery Schedule's endless revisions requires patience from the QC Operator.",
     [], "trap"),
    ("The Post Producer owned up to the mistake in the Music Cue Sheet.", [], "trap"),
    ("ReviewHub is online again after the outage in the Machine Room.", [], "trap"),
    ("The Senior Colourist replaced two bulbs in the Grading Theatre projector.", [], "trap"),
    ("Final QC is part of the reason the Deliverables Package went out late.", [], "trap"),
    ("The dailies are a mix of drone footage and studio rushes.", [], "trap"),
    ("Sound advice from the Post Supervisor: keep a copy of the Delivery Schedule open.", [], "trap"),
    ("The QC Report follows the Delivery Schedule's template.", [], "trap"),
    ("Staff turnover in the Editorial Team has been high this year.", [], "trap"),
    ("The Archive Backup probably depends on Nexis too.", [], "trap"),
    ("I think the Assistant Editor might own the Turnover Package on this show.", [], "trap"),
    ("We believe Pro Tools needs Nexis, but nobody has checked.", [], "trap"),
]


def name_in(name, text):
    return re.search(r"(?<![\w])" + re.escape(name) + r"(?![\w])", text, re.IGNORECASE) is not None


def main():
    errors = []
    titles = {}
    for title, kind, aliases in ENTRIES:
        if title in titles:
            errors.append("duplicate entry title: " + title)
        if kind not in ALLOWED_KINDS:
            errors.append("bad kind %r for %s" % (kind, title))
        titles[title] = [title] + list(aliases)
    rel_names = {r["name"] for r in RELATIONS}
    if len(rel_names) != 6:
        errors.append("expected 6 relations")

    seen_text = set()
    for text, gold, cue in SENTENCES:
        if text in seen_text:
            errors.append("duplicate sentence: " + text)
        seen_text.add(text)
        if cue not in ALLOWED_CUES:
            errors.append("bad cue %r: %s" % (cue, text))
        named = [t for t, names in titles.items() if any(name_in(n, text) for n in names)]
        if len(named) < 2:
            errors.append("names < 2 entries (%s): %s" % (named, text))
        seen_triples = set()
        for triple in gold:
            if len(triple) != 3:
                errors.append("bad triple %r" % (triple,))
                continue
            a, rel, b = triple
            if a not in titles:
                errors.append("unknown title %r in: %s" % (a, text))
            if b not in titles:
                errors.append("unknown title %r in: %s" % (b, text))
            if rel not in rel_names:
                errors.append("unknown relation %r in: %s" % (rel, text))
            if a == b:
                errors.append("self-loop in: " + text)
            if tuple(triple) in seen_triples:
                errors.append("duplicate triple %r in: %s" % (triple, text))
            seen_triples.add(tuple(triple))
            for end in (a, b):
                if end in titles and end not in named:
                    errors.append("gold end %r not named in: %s" % (end, text))

    if errors:
        for e in errors:
            print("ERROR:", e)
        sys.exit(1)

    out = {
        "domain": DOMAIN,
        "note": NOTE,
        "relations": RELATIONS,
        "entries": [{"title": t, "kind": k, "aliases": a} for t, k, a in ENTRIES],
        "sentences": [{"text": s, "gold": g, "cue": c} for s, g, c in SENTENCES],
    }
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "extraction_set6.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(out, f, indent=2, ensure_ascii=False)
        f.write("\n")

    n_gold = sum(1 for _, g, _ in SENTENCES if g)
    n_triples = sum(len(g) for _, g, _ in SENTENCES)
    print("entries:", len(ENTRIES), dict(Counter(k for _, k, _ in ENTRIES)))
    print("relations:", len(RELATIONS))
    print("sentences:", len(SENTENCES), "with gold:", n_gold, "with []:", len(SENTENCES) - n_gold)
    print("gold triples:", n_triples,
          dict(Counter(t[1] for _, g, _ in SENTENCES for t in g).most_common()))
    print("cue | total | gold non-empty | gold []")
    cues = Counter(c for _, _, c in SENTENCES)
    for c, n in cues.most_common():
        ng = sum(1 for _, g, cc in SENTENCES if cc == c and g)
        print("%s | %d | %d | %d" % (c or "(none)", n, ng, n - ng))
    print("OK")


if __name__ == "__main__":
    main()
