"""Read decodebench result JSON (and suite documents) for the plotting and summary scripts.

A *result document* is what `decodebench run --json PATH` writes (docs/result.schema.json).
A *suite document* (docs/suite.schema.json) is a JSON object whose key `results` holds a list
of result documents; each of them is read as if it came from its own file, and named by its
configuration's label (`configurations[].label`, matched through `configurations[].result`)
where the suite has one.

`load(path)` returns a list of `Result` (one for a result file, one per entry of a suite) or
raises `InputError` whose message names the file and the problem. Only what the scripts use
is checked (schema major version, runs, per-token samples); full validation is
scripts/validate-result's job.

The helpers below turn the raw JSON into display strings and microsecond series. Times in the
JSON are nanoseconds, except phase `gpu_ms` (milliseconds).
"""
from __future__ import annotations

import dataclasses
import json
import math
import pathlib

SUPPORTED_MAJOR = "1"
"""Result documents with schema_version "1.x" are read; later minor versions only add fields."""

PHASE_ORDER = ("h2d", "launch", "wait", "argmax")
"""The host-side phases of one decode step, in the order they happen."""

PHASE_TOTAL = "total"
PHASE_GPU_MS = "gpu_ms"


class InputError(Exception):
    """A result file that cannot be used; the message names the file and the problem."""


@dataclasses.dataclass
class Result:
    """One result document and where it came from."""

    path: pathlib.Path
    doc: dict
    suite_index: int | None  # position in a suite's `results`, None for a plain result file
    stem: str  # file-name stem for outputs: "<file stem>" or "<file stem>-<n>" for a suite entry
    suite_label: str = ""  # the suite configuration's label ("layers=4 dtype=bf16"), if known

    @property
    def where(self) -> str:
        """The file (and suite entry) for messages, e.g. 'a.json' or 'suite.json results[2]'."""
        if self.suite_index is None:
            return str(self.path)
        return f"{self.path} results[{self.suite_index}]"

    @property
    def runs(self) -> list:
        return self.doc["runs"]


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _read_json(path: pathlib.Path):
    try:
        text = path.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, not a result file") from None
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror or e}") from None
    try:
        return json.loads(text)
    except UnicodeDecodeError:
        raise InputError(f"{path}: not JSON (not UTF-8 text)") from None
    except json.JSONDecodeError as e:
        raise InputError(f"{path}: not JSON: {e.msg} at line {e.lineno} column {e.colno}") from None


def check_result(doc, where: str) -> None:
    """Raise InputError unless `doc` is a result document the scripts can use."""
    if not isinstance(doc, dict):
        raise InputError(f"{where}: not a decodebench result (expected a JSON object, "
                         f"found {type(doc).__name__})")
    if "schema_version" not in doc:
        raise InputError(f"{where}: no schema_version (expected {SUPPORTED_MAJOR}.x); "
                         "not a decodebench result?")
    version = doc["schema_version"]
    if not isinstance(version, str) or version.split(".")[0] != SUPPORTED_MAJOR:
        raise InputError(f"{where}: schema_version {json.dumps(version)} is not supported "
                         f"(expected {SUPPORTED_MAJOR}.x)")
    runs = doc.get("runs")
    if not isinstance(runs, list) or not runs:
        raise InputError(f"{where}: no runs (the key 'runs' is missing or empty)")
    for i, run in enumerate(runs):
        if not isinstance(run, dict):
            raise InputError(f"{where}: runs[{i}] is not an object")
        name = f"runs[{i}] ({run['label']})" if isinstance(run.get("label"), str) else f"runs[{i}]"
        results = run.get("results")
        samples = results.get("samples_ns") if isinstance(results, dict) else None
        if not isinstance(samples, list) or not samples:
            raise InputError(f"{where}: {name}: no per-token samples (results.samples_ns "
                             "missing or empty)")
        if not all(_is_number(s) for s in samples):
            raise InputError(f"{where}: {name}: results.samples_ns holds a non-number")


def load(path) -> list:
    """Read a result or suite file; return its result documents as a list of Result."""
    path = pathlib.Path(path)
    doc = _read_json(path)
    stem = path.stem
    if isinstance(doc, dict) and "runs" not in doc and "results" in doc:
        entries = doc["results"]
        if not isinstance(entries, list):
            raise InputError(f"{path}: 'results' is not a list of result documents")
        if not entries:
            raise InputError(f"{path}: suite holds no results (the list 'results' is empty)")
        labels = {}
        configurations = doc.get("configurations")
        for config in configurations if isinstance(configurations, list) else []:
            if isinstance(config, dict) and isinstance(config.get("result"), int) \
                    and isinstance(config.get("label"), str):
                labels[config["result"]] = config["label"]
        width = len(str(len(entries)))
        out = []
        for i, entry in enumerate(entries):
            result = Result(path, entry, i, f"{stem}-{i + 1:0{width}d}", labels.get(i, ""))
            check_result(entry, result.where)
            out.append(result)
        return out
    check_result(doc, str(path))
    return [Result(path, doc, None, stem)]


# --- display helpers ---------------------------------------------------------------------------

def _get(doc, *keys, default=None):
    """doc[k1][k2]... or `default` when a level is missing or not an object."""
    for key in keys:
        if not isinstance(doc, dict) or key not in doc:
            return default
        doc = doc[key]
    return doc


def model_name(doc: dict) -> str:
    """The model's display name: model.name, else the first run's key.model, else 'model?'."""
    name = _get(doc, "model", "name")
    if isinstance(name, str) and name:
        return name
    runs = doc.get("runs")
    key_model = _get(runs[0], "key", "model") if isinstance(runs, list) and runs else None
    return key_model if isinstance(key_model, str) and key_model else "model?"


def model_detail(doc: dict) -> str:
    """Data type and shape, e.g. 'BF16 · 28 layers · hidden 3584 · vocab 152064'."""
    parts = []
    dtype = _get(doc, "model", "file_type")
    if isinstance(dtype, str) and dtype:
        parts.append(dtype)
    shape = _get(doc, "model", "shape", default={})
    if isinstance(shape, dict):
        for key, fmt in (("layers", "{} layers"), ("hidden", "hidden {}"), ("vocab", "vocab {}")):
            if _is_number(shape.get(key)):
                parts.append(fmt.format(shape[key]))
    return " · ".join(parts)


def backend_device(doc: dict) -> str:
    """'cuda · NVIDIA H200' (backend name and device) from `backend`."""
    name = _get(doc, "backend", "name", default="")
    device = _get(doc, "backend", "device", default="")
    return " · ".join(p for p in (name, device) if isinstance(p, str) and p) or "backend?"


def date(doc: dict) -> str:
    """environment.timestamp as '2026-11-30 10:35 UTC' (the raw string if it does not parse)."""
    stamp = _get(doc, "environment", "timestamp")
    if not isinstance(stamp, str) or not stamp:
        return "date?"
    if len(stamp) >= 16 and stamp[10] == "T" and stamp.endswith("Z"):
        return f"{stamp[:10]} {stamp[11:16]} UTC"
    return stamp


def tool_version(doc: dict) -> str:
    """'decodebench 0.1.0 (9ff9a29d8524)', or '' without tool information. A probe build (its
    tool.build_type names one, e.g. 'Release (probe build: DECODEBENCH_X_DIGITS=1)') says so:
    'decodebench 0.1.0 (9ff9a29d8524, probe build: DECODEBENCH_X_DIGITS=1)', as its --version does,
    so that its figures are not taken for a default build's."""
    version = _get(doc, "tool", "version")
    sha = _get(doc, "tool", "git_sha")
    if not isinstance(version, str):
        return ""
    facts = [sha] if isinstance(sha, str) and sha else []
    build_type = _get(doc, "tool", "build_type")
    if isinstance(build_type, str) and "(probe build: " in build_type:
        facts.append(build_type[build_type.index("(probe build: ") + 1:].rstrip(")"))
    return f"decodebench {version}" + (f" ({', '.join(facts)})" if facts else "")


def run_label(run: dict, index: int) -> str:
    """The run's label ('eager', 'graph+phases', 'cpu'), or 'run <n>' without one."""
    label = run.get("label")
    return label if isinstance(label, str) and label else f"run {index + 1}"


def run_labels(runs: list) -> list:
    """Labels for all runs, made unique with ' #n' where two runs share a label."""
    labels = [run_label(r, i) for i, r in enumerate(runs)]
    seen = {}
    out = []
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
        out.append(label if labels.count(label) == 1 else f"{label} #{seen[label]}")
    return out


def run_id(run: dict):
    """runs[].key.id, the identity used to match runs across files; None if absent."""
    value = _get(run, "key", "id")
    return value if isinstance(value, str) and value else None


def run_model(run: dict):
    """runs[].key.model ('gguf:/path', 'synthetic:qwen2.5-7b'); None if absent."""
    value = _get(run, "key", "model")
    return value if isinstance(value, str) and value else None


def samples_us(run: dict) -> list:
    """Per-token decode latency (TPOT) in microseconds, in token order."""
    return [s / 1e3 for s in run["results"]["samples_ns"]]


def tokens_per_s(run: dict):
    value = _get(run, "results", "stats", "tokens_per_s")
    return value if _is_number(value) else None


def run_batch(run: dict) -> int:
    """runs[].batch (else key.batch, else 1: documents from before batched decode)."""
    for value in (run.get("batch"), _get(run, "key", "batch")):
        if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
            return value
    return 1


def step_ns(run: dict):
    """Median step time (ns) of a run (at batch M a step decodes one token of each sequence), or
    None."""
    value = tpot_summary(run).get("median")
    return value if _is_number(value) and value > 0 else None


def aggregate_tokens_per_s(run: dict):
    """results.stats.aggregate_tokens_per_s, else batch / median step time; None without it."""
    value = _get(run, "results", "stats", "aggregate_tokens_per_s")
    if _is_number(value) and value > 0:
        return float(value)
    step = step_ns(run)
    return run_batch(run) * 1e9 / step if step else None


def tpot_summary(run: dict) -> dict:
    """results.stats.tpot_ns, or an empty dict."""
    value = _get(run, "results", "stats", "tpot_ns")
    return value if isinstance(value, dict) else {}


def phase_names(names) -> list:
    """Host phases among `names`: the known ones in step order, then any others sorted
    (total and gpu_ms excluded: they are not parts of the stack)."""
    known = [p for p in PHASE_ORDER if p in names]
    extra = sorted(n for n in names
                   if n not in PHASE_ORDER and n not in (PHASE_TOTAL, PHASE_GPU_MS))
    return known + extra


def phase_samples(run: dict) -> dict:
    """results.phase_samples as {phase: [values]} (ns; gpu_ms in ms), or {} when absent.

    Series that are not lists of numbers are left out, and so is a gpu_ms series with negative
    entries (older builds wrote -1 on the CPU, which has no GPU time to measure); all series
    are cut to the shortest length so that index i is the same token in every one."""
    raw = _get(run, "results", "phase_samples")
    if not isinstance(raw, dict):
        return {}
    series = {k: v for k, v in raw.items()
              if isinstance(v, list) and v and all(_is_number(x) for x in v)
              and not (k == PHASE_GPU_MS and any(x < 0 for x in v))}
    if not series:
        return {}
    n = min(len(v) for v in series.values())
    return {k: v[:n] for k, v in series.items()}


def phase_medians(run: dict) -> dict:
    """Median of each phase {phase: value} (ns; gpu_ms in ms) from results.phases, else computed
    from results.phase_samples; {} when the run has no phase timing."""
    out = {}
    raw = _get(run, "results", "phases")
    if isinstance(raw, dict):
        for name, summary in raw.items():
            if isinstance(summary, dict) and _is_number(summary.get("median")):
                out[name] = summary["median"]
    if not out:
        for name, values in phase_samples(run).items():
            out[name] = median(values)
    return out


def median(values) -> float:
    ordered = sorted(values)
    n = len(ordered)
    mid = n // 2
    return float(ordered[mid]) if n % 2 else (ordered[mid - 1] + ordered[mid]) / 2.0


def roofline_efficiency(run: dict):
    """roofline.efficiency (achieved / measured bandwidth), None where there is no measured
    bandwidth (CPU runs: null, or 0 from builds before commit e4a730e)."""
    eff = _get(run, "roofline", "efficiency")
    measured = _get(run, "roofline", "measured_gbps")
    if not _is_number(eff) or not _is_number(measured) or measured <= 0:
        return None
    return eff


def main_run(runs: list):
    """The run that stands for a result in summary tables: the first 'graph' run (CUDA graph
    replay, no phase timing), else the first run without '+phases' in its label, else runs[0]."""
    labels = [run.get("label") if isinstance(run.get("label"), str) else "" for run in runs]
    for wanted in (lambda name: name == "graph", lambda name: "+phases" not in name):
        for run, label in zip(runs, labels):
            if wanted(label):
                return run
    return runs[0]


def weights_label(doc: dict) -> str:
    """model.file_type without llama.cpp's 'MOSTLY_'/'ALL_' prefix ('Q4_1', 'BF16', 'Q4_K_M'),
    or 'weights?' when absent."""
    value = _get(doc, "model", "file_type")
    if not isinstance(value, str) or not value:
        return "weights?"
    for prefix in ("MOSTLY_", "ALL_"):
        if value.startswith(prefix):
            return value[len(prefix):]
    return value
