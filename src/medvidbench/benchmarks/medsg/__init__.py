"""MedSG-Bench (medical image-sequence grounding): its scoring, for the plug-in to come.

So far this package holds the scorer of the official evaluation and of the corrected profile
(:mod:`.scoring`), checked against every test vector of the specification. The benchmark
definition (loader, identity rule, submission formats, synthetic set) is not published in the
entry-point group yet, so no server or command hosts it.
"""
