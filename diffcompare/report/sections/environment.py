"""Environment: versions, CPU/GPU, thread settings and run time, from ``run.json``
(:func:`environment_data` computes, ``templates/environment.html.j2`` renders)."""
from __future__ import annotations

import json

from ..fmt import fmt_num
from ..templates import render
from . import Section


def _duration(ta, tb) -> str:
    if ta is None or tb is None:
        return "unknown"
    s = (tb - ta).total_seconds()
    return f"{s:.0f} s" if s < 120 else f"{s / 60:.1f} min ({s:.0f} s)"


def _when(t) -> str:
    return t.strftime("%Y-%m-%d %H:%M:%S UTC") if t is not None else "—"


def environment_data(data) -> dict:
    """What the section shows, as plain values (the template lays it out)."""
    env, run = data.environment, data.run
    if not run:
        return {"recorded": False}
    start, end = data.time_span()
    suite = data.suite
    return {
        "recorded": True, "run_id": data.run_id or "—", "started": _when(start), "ended": _when(end),
        "duration": _duration(start, end), "n_sessions": len(run.get("sessions") or []),
        "machine": [["CPU", env.get("cpu_model") or "—"],
                    ["CPU cores (affinity)", f"{env.get('cpu_count', '—')} ({env.get('cpu_affinity', '—')})"],
                    ["GPU", env.get("gpu") or "none"],
                    ["JAX devices", ", ".join(f"{d.get('platform')}:{d.get('kind')}"
                                              for d in env.get("jax_devices") or []) or "—"],
                    *([["GPU start failure", env["gpu_error"]]] if env.get("gpu_error") else []),
                    *([["CUDA", ", ".join(f"{k} {v}" for k, v in env["cuda"].items() if v)
                        or "—"]] if env.get("cuda") else []),
                    *([["GPU workers' XLA memory settings",
                        ", ".join(f"{k}={v}" for k, v in env["gpu_worker_env"].items()
                                  if v is not None) or "—"]]
                      if suite.get("device") == "gpu" and env.get("gpu_worker_env") else []),
                    ["Python", f"{env.get('python', '—')} ({env.get('implementation', '')})"],
                    ["platform", env.get("platform") or "—"],
                    ["host", env.get("hostname") or "—"]],
        "versions": [[k, v] for k, v in sorted((env.get("versions") or {}).items())],
        "threads": [[k, v] for k, v in sorted((env.get("thread_env") or {}).items())],
        "sessions": [[s.get("started_at", "—"), s.get("hostname", "—"), s.get("pid", "—"),
                      "resumed" if s.get("resumed") else "first",
                      "machine changed" if s.get("environment") else ""]
                     for s in run.get("sessions") or []],
        "suite": [["name", suite.get("name", "—")], ["file", suite.get("path") or "—"],
                  ["device", suite.get("device") or "cpu"],
                  ["seeds", ", ".join(map(str, suite.get("seeds") or []))],
                  ["dtypes", ", ".join(suite.get("dtypes") or [])],
                  ["timeout per cell", f"{fmt_num(suite.get('timeout_s'))} s"],
                  ["cell options", json.dumps(suite.get("cell_options") or {}, sort_keys=True)],
                  ["studies", ", ".join(suite.get("studies") or []) or "—"]],
    }


def build(data) -> Section:
    return Section("environment", "Environment", render("environment.html.j2", **environment_data(data)))
