"""Edges: link, unlink, retype and correct (append-only, audited), the relation vocabulary and the two clocks."""
