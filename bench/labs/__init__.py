"""Measurement labs used by benches, tests and the hop_lab / fold_replay commands."""
