"""Words and sentence parts the synthetic test set is written with.

Modelled on the question and answer styles of the real benchmark (one-shot examples of each
qa_type), so that a researcher recognises the formats; the clinical content is invented.
"""

from __future__ import annotations

# Which datasets contribute to which task, with relative weights. The real mapping is only
# partly documented (metrics.md §2.1); this one follows it where it is known.
TASK_DATASETS: dict[str, dict[str, float]] = {
    "tal": {"NurViD": 0.7, "AVOS": 0.3},
    "stg": {"CoPESD": 0.35, "AVOS": 0.25, "CholecTrack20": 0.2, "EgoSurgery": 0.2},
    "next_action": {"AVOS": 0.2, "CholecT50": 0.2, "CoPESD": 0.2, "NurViD": 0.3, "EgoSurgery": 0.1},
    "dense_captioning": {"NurViD": 0.6, "AVOS": 0.2, "CoPESD": 0.2},
    "video_summary": {"CoPESD": 0.3, "CholecT50": 0.25, "AVOS": 0.2, "NurViD": 0.25},
    "region_caption": {"EgoSurgery": 0.7, "CholecTrack20": 0.3},
    "skill_assessment": {"JIGSAWS": 1.0},
    "cvs_assessment": {"Cholec80_CVS": 1.0},
}

# Frame sizes (width, height) of each source's videos, for bounding boxes.
FRAME_SIZE: dict[str, tuple[int, int]] = {
    "AVOS": (1280, 720),
    "CoPESD": (1280, 1024),
    "CholecTrack20": (854, 480),
    "EgoSurgery": (1920, 1080),
}

# Clip frame rates and their shares in the test set (dataset card); the rest are 0.2 fps.
FPS_CHOICES: tuple[tuple[str, float], ...] = (
    ("0.5", 0.633),
    ("1.0", 0.22),
    ("2.0", 0.075),
    ("0.2", 0.072),
)

ROLES = {
    "NurViD": [
        "You are an expert in procedural video interpretation.",
        "You are an expert in understanding procedural healthcare videos.",
        "You are an expert in healthcare workflow understanding.",
    ],
    "surgery": [
        "You are an expert in surgical analysis.",
        "You are an expert in surgical video interpretation.",
        "You are a specialist in analyzing surgical videos.",
    ],
}

SETTINGS = {
    "AVOS": "The video comes from the AVOS dataset of open surgeries.",
    "CholecT50": "This laparoscopic cholecystectomy clip comes from the CholecT50 dataset.",
    "CholecTrack20": "This laparoscopic cholecystectomy clip is annotated for instrument tracking.",
    "Cholec80_CVS": "This Cholec80-CVS clip is used to score the Critical View of Safety.",
    "CoPESD": (
        "The following clip depicts an endoscopic submucosal dissection (ESD), a precise "
        "technique for lesion removal captured via an endoscopic camera."
    ),
    "EgoSurgery": "This is an egocentric recording of an open surgery captured from a "
    "head-mounted camera.",
    "NurViD": "This video shows part of a nursing procedure performed in a clinical environment.",
    "JIGSAWS": "This clip features robotic bench-top tasks like suturing, knot-tying, or "
    "needle-passing.",
}

OBJECTS = {
    "AVOS": ["scissors", "needle driver", "forceps", "left hand", "right hand"],
    "CoPESD": ["forceps", "knife"],
    "CholecTrack20": ["grasper", "hook", "clipper", "bipolar", "irrigator", "specimen bag"],
    "EgoSurgery": ["scalpel", "forceps", "pen", "needle holder", "suction cannula", "gauze"],
}

AVOS_ACTIONS = ["cutting", "tying", "suturing"]

ACTORS = ["The healthcare professional", "The nurse", "The clinician", "The caregiver"]
SURGEONS = ["The surgeon", "The primary surgeon", "The assistant", "The operator"]
HANDS = [
    "Held by the right hand,",
    "Held by the left hand,",
    "Gripped firmly,",
    "Guided by the assistant,",
]

VERBS = [
    "checks",
    "prepares",
    "adjusts",
    "cleans",
    "positions",
    "inspects",
    "secures",
    "applies",
    "removes",
    "documents",
    "organizes",
    "disinfects",
    "retracts",
    "dissects",
    "grasps",
]
OBJECTS_NURSING = [
    "the record sheet",
    "the medication tray",
    "the infusion line",
    "the bed sheet",
    "the patient's arm",
    "the glucometer",
    "the dressing",
    "the catheter",
    "the gloves",
    "the syringe",
    "the underpad",
    "the patient mannequin",
]
OBJECTS_SURGERY = [
    "the mucosal flap",
    "the gallbladder",
    "the cystic duct",
    "the tissue edge",
    "the suture thread",
    "the incision site",
    "the vessel",
    "the specimen",
    "the submucosal layer",
    "the skin margin",
]
MANNERS = [
    "carefully",
    "methodically",
    "briefly",
    "steadily",
    "with both hands",
    "while facing the patient",
    "under direct vision",
    "before stepping back",
]
PURPOSES = [
    "to maintain a clear field",
    "to prepare for the next step",
    "to ensure sterility",
    "to confirm the patient's identity",
    "to expose the underlying layer",
    "to control minor bleeding",
    "to keep the area dry",
    "to complete the procedure",
]

SUMMARY_OPENERS = [
    "The procedure features",
    "The video shows",
    "This clip documents",
    "The recording captures",
]
SUMMARY_FOCUS = [
    "coordinated forceps countertraction and knife dissection",
    "systematic dissection of the hepatocystic triangle",
    "a stepwise nursing routine at the bedside",
    "repeated suturing and knot tying on the skin",
    "careful mobilisation of the mucosal flap",
    "clipping and division of the cystic structures",
]
SUMMARY_CLOSERS = [
    "interspersed with brief pauses for camera realignment.",
    "ending with a check of the operative field.",
    "with attention to hand hygiene and documentation.",
    "progressing steadily toward completion of the step.",
]

SA_ASPECTS = [
    "Respect for tissue",
    "Suture/needle handling",
    "Time and motion",
    "Flow of operation",
    "Overall performance",
    "Quality of final product",
]
JIGSAWS_TASKS = ["Suturing", "Knot_Tying", "Needle_Passing"]

CVS_COMPONENTS = [
    ("two_structures", "Two structures"),
    ("cystic_plate", "Cystic plate"),
    ("hepatocystic_triangle", "Hepatocystic triangle"),
]

GARBAGE = [
    "",
    "I cannot determine this from the video.",
    "As an AI model, I cannot view videos.",
    "The answer is unclear.",
    "yes",
    "0",
    "[]",
    "null",
    "See above.",
    "The video shows a medical procedure.",
]
