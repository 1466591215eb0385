// The explorer's views and what the page says about them. A bank of more entries than the
// server's threshold is never drawn whole: it opens on its communities (one node each, sized
// by its count); a click opens one community, and a query opens the answer's neighbourhood.
// Each of those views is laid out on the server when it is asked for.

const fmt = (n) => Number(n || 0).toLocaleString("en");

export function viewUrl(cfg, view) {
  const base = cfg.graphBase;
  if (view.level === "communities") return `${base}/communities`;
  if (view.level === "community") return `${base}/communities/${view.community}?include_backfill=true`;
  if (view.level === "around") {
    return `${base}/around?include_backfill=true&ids=${view.ids.map(encodeURIComponent).join(",")}`;
  }
  return cfg.graphUrl;
}

// The overview as graph data: community nodes (id "community:<id>") and weighted links.
export function overviewPayload(data) {
  const id = (cid) => `community:${cid}`;
  const nodes = data.communities.map((c, i) => ({
    id: id(c.id),
    cid: c.id,
    title: c.label,
    kind: "community",
    status: "",
    degree: 0,
    size: c.size,
    central: c.central,
    community: i,
    x: c.x, y: c.y, z: c.z, x2: c.x2, y2: c.y2,
  }));
  const links = data.links.map((l, i) => ({
    id: i + 1,
    from: id(l.from),
    to: id(l.to),
    relation: "between communities",
    has_note: true,
    source: "overview",
    weight: l.weight,
  }));
  return { nodes, links, truncated: data.truncated, layout: { status: data.status } };
}

// {where, notice, note}: the bar at the top of the stage, the truncation notice in it, and the
// layout line under the filters.
export function describeView(view, data, cfg, overview) {
  const total = fmt(cfg.entryCount);
  if (view.level === "communities") {
    if (data.status === "missing") {
      return {
        where: `${total} entries: too many to draw whole.`,
        notice: "Communities are not built for this bank yet: ask a question to see its "
          + "neighbourhood, or build them (python manage.py build_communities "
          + `${cfg.bank}; a nightly job does it when a worker runs).`,
        note: "No community overview yet.",
      };
    }
    const outside = data.entries - data.clustered;
    return {
      where: `${total} entries in ${fmt(data.total_communities)} communities. `
        + "Click one to open it, or ask a question.",
      notice: data.truncated
        ? `Showing the ${fmt(data.communities.length)} largest of ${fmt(data.total_communities)} communities.`
        : "",
      note: `Too many entries to draw whole (over ${fmt(cfg.overviewMin)}): the overview shows `
        + `Louvain communities (built ${data.computed_at ? new Date(data.computed_at).toLocaleString() : "?"}`
        + `${outside > 0 ? `; ${fmt(outside)} entries belong to none` : ""}). Each view is laid out `
        + "on the server the first time it is opened, and kept until its edges change.",
    };
  }
  const shown = data.view ? data.view.shown : data.nodes.length;
  if (view.level === "community") {
    const c = data.view.community;
    return {
      where: `Community: ${c.label}`,
      notice: data.truncated
        ? `Truncated: showing the ${fmt(shown)} most central of its ${fmt(data.view.total)} entries.`
        : "",
      note: data.layout && data.layout.status === "ready"
        ? `${fmt(shown)} entries of one community, laid out on the server and kept until its edges change; colours are sub-clusters.`
        : `${fmt(shown)} entries of one community, laid out on the server just now (kept for the next visit); colours are sub-clusters.`,
    };
  }
  if (view.level === "around") {
    const seeds = data.view.seeds.length;
    return {
      where: seeds === 1 ? "One entry and its neighbours" : `The answer (${fmt(seeds)} entries) and their neighbours`,
      notice: data.truncated
        ? `Truncated: showing ${fmt(shown)} of ${fmt(data.view.total)} entries.`
        : "",
      note: "Up to 12 neighbours of each entry, laid out on the server just now.",
    };
  }
  const layout = data.layout || {};
  const when = layout.computed_at ? ` (${new Date(layout.computed_at).toLocaleString()})` : "";
  const pending = layout.status === "pending"
    ? ` The whole-bank layout is queued for a worker; until it lands positions are provisional (python manage.py build_layout ${cfg.bank} does it now).`
    : "";
  return {
    where: "",
    notice: data.truncated
      ? `Truncated: showing the ${fmt(data.nodes.length)} best-connected of ${total} entries.`
      : "",
    note: `Layout: ${layout.status || "?"}${when}. Positions are computed on the server; colours `
      + `are clusters, size is degree.${pending}`,
  };
}
