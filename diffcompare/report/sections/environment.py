"""Environment: versions, CPU/GPU, thread settings and run time, from ``run.json``."""
from __future__ import annotations

import json

from ..fmt import fmt_num
from ..html import code, join, p, scroll, table, tag
from . import Section


def _duration(ta, tb) -> str:
    if ta is None or tb is None:
        return "unknown"
    s = (tb - ta).total_seconds()
    return f"{s:.0f} s" if s < 120 else f"{s / 60:.1f} min ({s:.0f} s)"


def _when(t) -> str:
    return t.strftime("%Y-%m-%d %H:%M:%S UTC") if t is not None else "—"


def build(data) -> Section:
    env, run = data.environment, data.run
    if not run:
        return Section("environment", "Environment",
                       p("No ", code("run.json"), " in this results folder: the machine and versions "
                         "were not recorded.", class_="warn"))
    start, end = data.time_span()
    machine = [["CPU", env.get("cpu_model") or "—"],
               ["CPU cores (affinity)", f"{env.get('cpu_count', '—')} ({env.get('cpu_affinity', '—')})"],
               ["GPU", env.get("gpu") or "none"],
               ["JAX devices", ", ".join(f"{d.get('platform')}:{d.get('kind')}" for d in env.get("jax_devices") or [])
                or "—"],
               ["Python", f"{env.get('python', '—')} ({env.get('implementation', '')})"],
               ["platform", env.get("platform") or "—"],
               ["host", env.get("hostname") or "—"]]
    versions = [[k, v] for k, v in sorted((env.get("versions") or {}).items())]
    threads = [[k, v] for k, v in sorted((env.get("thread_env") or {}).items())]
    sessions = [[s.get("started_at", "—"), s.get("hostname", "—"), s.get("pid", "—"),
                 "resumed" if s.get("resumed") else "first",
                 "machine changed" if s.get("environment") else ""]
                for s in run.get("sessions") or []]
    suite = data.suite
    suite_rows = [["name", suite.get("name", "—")], ["file", suite.get("path") or "—"],
                  ["seeds", ", ".join(map(str, suite.get("seeds") or []))],
                  ["dtypes", ", ".join(suite.get("dtypes") or [])],
                  ["timeout per cell", f"{fmt_num(suite.get('timeout_s'))} s"],
                  ["cell options", json.dumps(suite.get("cell_options") or {}, sort_keys=True)],
                  ["studies", ", ".join(suite.get("studies") or []) or "—"]]
    body = join(
        p("Run ", code(data.run_id or "—"), " started ", _when(start), "; its last result (grid row or "
          "study) was written ", _when(end), ": ", _duration(start, end), " in all, over ",
          str(len(run.get("sessions") or [])), " session(s) (a resumed run adds one)."),
        tag("div", scroll(table(["machine", ""], machine, caption="Machine", cls="compact kv")),
            scroll(table(["library", "version"], versions, caption="Versions", cls="compact kv")),
            class_="two-col"),
        tag("div", scroll(table(["variable", "value"], threads,
                                caption="Thread settings given to every worker (one BLAS/XLA thread, "
                                        "so timings compare methods, not thread pools)", cls="compact kv")),
            scroll(table(["setting", "value"], suite_rows, caption="Suite", cls="compact kv")),
            class_="two-col"),
        scroll(table(["session started", "host", "pid", "kind", ""], sessions, caption="Sessions",
                     cls="compact")))
    return Section("environment", "Environment", body)
