"""The edge-proposal confidence: each feature moves the score the way its weight says, the
score is explained term by term, and the queue stores why (ordering properties, no fixed
numbers: the weights are refitted on the tuning sets)."""

from __future__ import annotations

import pytest

from graph.ingest.extract import confidence as scoring
from graph.ingest.extract.base import Relation, Statement
from graph.ingest.extract.run import extract_edges
from graph.models import EdgeProposal

REQUIRES = Relation("requires", "", ("requires", "needs"), ("is required by",), False)
EXACT = ("title", "title")


def conf(span, a, b, hows=EXACT, *, prior=0.9, names=None, relation=REQUIRES, basis=""):
    st = Statement(span, relation.name, a, b, prior, basis=basis)
    if names is None:  # the two ends are the bank's names found in the span
        names = [(span.find(t), span.find(t) + len(t)) for t in (a, b) if t in span]
    return scoring.score(scoring.features(st, relation, hows, names))[0]


PLAIN = conf("Clip Ingest requires the Media Archive.", "Clip Ingest", "Media Archive")


def test_each_doubt_lowers_the_confidence_of_the_same_statement():
    span = "Clip Ingest requires the Media Archive."
    assert conf(span, "Clip Ingest", "Media Archive", ("title", "unresolved")) < PLAIN
    assert conf(span, "Clip Ingest", "Media Archive", ("fuzzy", "title")) < PLAIN
    it = conf("It requires the Media Archive.", "It", "Media Archive", ("self", "title"))
    assert it < conf("Ingest requires the Media Archive.", "Ingest", "Media Archive")
    hedged = conf("Clip Ingest may requires the Media Archive.", "Clip Ingest", "Media Archive")
    assert hedged < PLAIN
    no_cue = conf("Clip Ingest, the Media Archive.", "Clip Ingest", "Media Archive")
    assert no_cue < PLAIN
    far = "Clip Ingest on most weekday evenings requires the Media Archive."
    assert conf(far, "Clip Ingest", "Media Archive") < PLAIN
    relative = "Every clip that Legal Affairs clears requires the Media Archive."
    assert conf(relative, "Legal Affairs", "Media Archive") < conf(
        "Every clip of Legal Affairs requires the Media Archive.", "Legal Affairs", "Media Archive"
    )


def test_the_extractors_own_prior_orders_local_first_pass_and_gleaned_readings():
    span = "Clip Ingest requires the Media Archive."
    local, first, glean = (
        conf(span, "Clip Ingest", "Media Archive", prior=p) for p in (0.9, 0.8, 0.7)
    )
    assert local > first > glean


def test_a_long_sentence_is_trusted_less_than_a_short_one():
    long = (
        "Clip Ingest requires the Media Archive, as the newsroom was told at the spring "
        "meeting after the storm took the old tape store and most of the promo rota away."
    )
    assert conf(long, "Clip Ingest", "Media Archive") < PLAIN


def test_the_score_is_a_probability_explained_term_by_term():
    st = Statement("It requires the Media Archive.", "requires", "It", "Media Archive", 0.7)
    feats = scoring.features(st, REQUIRES, ("self", "unresolved"), [])
    value, terms = scoring.score(feats)
    assert 0 < value < 1
    assert [abs(t[1]) for t in terms] == sorted((abs(t[1]) for t in terms), reverse=True)
    weights = {**scoring.WEIGHTS, **scoring.HAND_SET}
    for name, contribution in terms:  # each term is its weight times its feature
        assert contribution == pytest.approx(weights[name] * feats[name], abs=1e-3)
    words = scoring.explain({"terms": terms}, limit=10)
    assert "an end unresolved −" in words and "an end is “It”/“This …” −" in words
    assert scoring.explain({}) == "" and scoring.explain(None) == ""


def test_bands_cover_the_unit_interval():
    assert scoring.band_of(1.0) == "high" and scoring.band_of(scoring.HIGH) == "high"
    assert scoring.band_of(0.7) == "medium" and scoring.band_of(0.0) == "low"
    edges = [(lo, hi) for _, lo, hi in scoring.BANDS]
    assert edges[0][1] == 1.0 and edges[-1][0] == 0.0
    assert all(a[0] == b[1] for a, b in zip(edges, edges[1:], strict=False))


@pytest.mark.django_db
def test_local_proposals_of_different_shapes_get_different_confidences(bank, make_entry):
    names = ["Clip Ingest", "Media Archive", "Newsroom", "Rights Check", "Legal Affairs"]
    e = {n: make_entry(n, kind="team", content="x") for n in names}
    doc = make_entry(
        "Bulletin notes",
        content=(
            "Clip Ingest requires the Media Archive. "
            # The local extractor now reads the parenthetical (it no longer pairs Legal Affairs
            # with the Rights Check); the proposal still carries the relative feature.
            "Clip Ingest, which Legal Affairs clears, requires a Rights Check. "
            "It is owned by the Newsroom. "
            "Rights Check needs the Porter Pool."
        ),
    )
    extract_edges(bank, entries=[doc.short_id])
    got = {(p.from_text, p.to_text): p for p in EdgeProposal.objects.filter(bank=bank)}
    plain = got[("Clip Ingest", "Media Archive")]
    relative = got[("Clip Ingest", "Rights Check")]
    pronoun = got[("It", "Newsroom")]
    unresolved = got[("Rights Check", "Porter Pool")]
    assert plain.from_entry_id == e["Clip Ingest"].pk
    assert len({p.confidence for p in got.values()}) == len(got) == 4
    assert plain.confidence > pronoun.confidence
    assert plain.confidence > relative.confidence and plain.confidence > unresolved.confidence
    assert plain.confidence >= scoring.HIGH > unresolved.confidence
    # The queue keeps why: the features and each one's contribution.
    assert relative.confidence_basis["features"]["relative"] == 1.0
    assert [t[0] for t in unresolved.confidence_basis["terms"]][0] == "unresolved_end"
