"""Plan -> the three files other tools read (templates/*.j2):

- opensm.conf        OpenSM options: routing engine, plugin, qos_* tables per port type;
- qos-policy.conf    port groups, one qos-level per class, match rules, qos-ulps;
- plugin-tables.conf the dla plugin's per-role table file (plugin/README.md, "The table file").

    from ibqos.render import render_plan
    paths = render_plan(plan, out_dir)     # {"opensm.conf": Path, ...}

Files are written to a temporary directory next to `out_dir` and renamed into place, so a
failure never leaves half-written configuration behind.
"""

from .render import FILES, check_osm_dir, render_plan, render_texts

__all__ = ["FILES", "check_osm_dir", "render_plan", "render_texts"]
