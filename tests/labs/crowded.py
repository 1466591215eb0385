"""A crowded bank for measuring answer economy (issue 16 item 3): long entries (a fifth of
them playbooks with long steps), each with 8–12 noted edges of 200–400 characters, made of
an engineering vocabulary so that questions in the same words find them. Deterministic for a
seed. Used by ``tests/graph/test_answer_budget.py`` and ``bench/answers.py --only crowded``.
"""

from __future__ import annotations

import random

WORDS = (
    "ledger invoice settlement batch cutoff replay gateway timeout retry idempotency key "
    "postgres replica vacuum index migration lock terraform state module provider bucket "
    "kafka topic consumer offset partition broker schema registry avro payload header "
    "deploy rollout canary rollback helm chart secret rotation certificate token scope "
    "cache eviction redis cluster shard latency budget alert pager runbook dashboard "
    "checkout payment capture refund dispute webhook signature nonce clock skew region"
).split()
RELATIONS = ["see_also", "clarifies", "corrects", "depends_on", "requires", "cites", "part_of"]
QUERIES = [
    "why does the settlement batch replay time out at the gateway",
    "postgres migration lock during deploy rollout",
    "rotate the webhook signature secret without downtime",
    "kafka consumer offset lag after a broker restart",
    "terraform state lock stuck after a cancelled run",
]


def text(rng: random.Random, words: int) -> str:
    out = []
    while len(out) < words:
        sentence = rng.sample(WORDS, rng.randint(6, 14))
        out.extend([sentence[0].capitalize(), *sentence[1:-1], sentence[-1] + "."])
    return " ".join(out[:words])


def crowded_lines(n: int = 120, seed: int = 16) -> list[dict]:
    """Import lines (API.md import format) of the crowded bank: ``n`` entries keyed
    ``crowd:<i>`` and their edges."""
    rng = random.Random(seed)
    lines = [{"type": "relation", "name": "depends_on", "inverse": "dependency_of"}]
    for i in range(n):
        entry = {
            "type": "entry",
            "key": f"crowd:{i}",
            "title": text(rng, rng.randint(12, 30)),
            "summary": text(rng, rng.randint(30, 60)),
            "useful_for": text(rng, rng.randint(30, 60)),
            "content": text(rng, rng.randint(400, 1200)),
            "kind": "playbook" if i % 5 == 0 else rng.choice(["fact", "gotcha", "recipe"]),
            "systems": rng.sample(WORDS, 2),
            "tasks": rng.sample(WORDS, 2),
            "lifetime": {"durable": True},
        }
        if i % 5 == 0:
            entry["steps"] = [text(rng, rng.randint(15, 30)) for _ in range(rng.randint(5, 9))]
        lines.append(entry)
    pairs = set()
    for i in range(n):
        while sum(1 for p in pairs if i in p) < rng.randint(8, 12):
            j = rng.randrange(n)
            if j != i and (i, j) not in pairs and (j, i) not in pairs:
                pairs.add((i, j))
    for i, j in sorted(pairs):
        lines.append(
            {
                "type": "edge",
                "from": f"crowd:{i}",
                "to": f"crowd:{j}",
                "relation": rng.choice(RELATIONS),
                "note": text(rng, rng.randint(35, 70))[:400],
            }
        )
    return lines
