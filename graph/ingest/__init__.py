"""Getting knowledge into a bank: import lines, backfills, header parsing, extractors."""
