"""Measurement labs: synthetic banks (the one-hop lab, the crowded bank), the replay of logged
queries, the labelled resolution set and the apt comparison of the Debian import.

Test scaffolding that the tests check and the bench scripts run (``bench/hop_lab.py``,
``bench/fold_replay.py``, ``bench/resolve.py``...). Not product code: nothing under ``kb/``,
``graph/``, ``workflows/``, ``mcpserver/``, ``explorer/`` or ``config/`` may import it, and it
is not packaged.
"""
