"""Tests of scripts/plot (and scripts/results-readme).

Run from the repository root: python3 tests/python/test_plot.py (CTest does, label python).
DECODEBENCH_BIN names the built decodebench binary; without it the test that plots a real CPU
result is skipped. Exit status 77 (CTest: skipped) when matplotlib is not installed.

Inputs: a small CPU result written by the binary, and synthetic result documents built here
(with per-token phase samples, as `--phase-timing` writes them on the GPU), so that the test
does not depend on a GPU or on files outside the repository.
"""
import json
import os
import pathlib
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PLOT = ROOT / "scripts" / "plot"
README = ROOT / "scripts" / "results-readme"
VALIDATE = ROOT / "scripts" / "validate-result"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
MIN_PNG_BYTES = 15_000  # a rendered chart with text and data; an empty canvas is far smaller


# --- helpers -------------------------------------------------------------------------------------

def png_info(path: pathlib.Path) -> tuple:
    """(width, height) from the PNG header; AssertionError unless the file is a PNG."""
    head = path.read_bytes()[:24]
    if head[:8] != PNG_MAGIC:
        raise AssertionError(f"{path}: not a PNG (magic bytes {head[:8]!r})")
    if head[12:16] != b"IHDR":
        raise AssertionError(f"{path}: PNG without IHDR as first chunk")
    return struct.unpack(">II", head[16:24])


def run(script: pathlib.Path, *args, cwd=None, env=None) -> subprocess.CompletedProcess:
    """Run a script with this interpreter; capture text output."""
    return subprocess.run([sys.executable, str(script), *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def summary(values: list) -> dict:
    """A results.stats.tpot_ns-style summary of `values` (ns)."""
    ordered = sorted(values)
    n = len(ordered)

    def pct(p):
        pos = p / 100 * (n - 1)
        lo = int(pos)
        hi = min(lo + 1, n - 1)
        return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)

    mean = sum(ordered) / n
    var = sum((v - mean) ** 2 for v in ordered) / (n - 1) if n > 1 else 0.0
    return {"count": n, "mean": mean, "median": pct(50), "p90": pct(90), "p99": pct(99),
            "min": float(ordered[0]), "max": float(ordered[-1]), "stddev": var ** 0.5,
            "median_ci95": [pct(40), pct(60)]}


def synthetic_run(label: str, graph: str, rng: random.Random, tokens: int, scale: float,
                  phases: bool) -> dict:
    """One run of a synthetic GPU result; with per-token phase samples when `phases`."""
    device = "Test GPU"
    shape = "4x256/h4kv2/ffn512/v1024"
    key = {"model": "synthetic:test-model", "shape": shape, "dtype": "BF16", "backend": "cuda",
           "graph": label, "batch": 1, "device": device}
    key["id"] = "|".join(f"{k}={key[k]}" for k in ("model", "shape", "dtype", "backend", "graph",
                                                   "batch", "device"))
    launch_base = 900_000 if graph == "eager" else 9_000
    series = {"h2d": [], "launch": [], "wait": [], "argmax": [], "total": [], "gpu_ms": []}
    samples = []
    for t in range(tokens):
        gpu = scale * 1_500_000 * (1 + rng.gauss(0, 0.01))
        h2d = 4_000 + rng.uniform(0, 1_000)
        launch = launch_base * (1 + rng.gauss(0, 0.05))
        wait = max(5_000.0, gpu - launch)
        argmax = 25_000 + rng.uniform(0, 5_000)
        total = h2d + launch + wait + argmax + 3_000
        if t == tokens // 2:  # one far outlier, as a real run often has
            total += 800_000
            wait += 800_000
        for name, value in (("h2d", h2d), ("launch", launch), ("wait", wait),
                            ("argmax", argmax), ("total", total)):
            series[name].append(int(value))
        series["gpu_ms"].append(gpu / 1e6)
        samples.append(int(total))
    results = {
        "tokens": [rng.randrange(1024) for _ in range(tokens + 1)],
        "timed_steps": tokens, "warmup_steps": 2, "start_position": 8, "stateless": False,
        "stopped_at_end_of_generation": False, "wall_ns": sum(samples),
        "stopping": {"rule": "tokens", "rounds": 1, "timed_s": sum(samples) / 1e9,
                     "median_noise": 0.0},
        "samples_ns": samples,
        "stats": {"tpot_ns": summary(samples), "tokens_per_s": 1e9 / summary(samples)["mean"]},
        "phases": {k: summary(v) for k, v in series.items()} if phases else None,
        "phase_samples": series if phases else None,
    }
    bytes_per_token = 3_000_000
    achieved = bytes_per_token / (summary(samples)["median"] / 1e9) / 1e9
    return {
        "key": key, "label": label,
        "graph": {"mode": label, "executed": graph, "capture_attempted": graph == "graph",
                  "captured": graph == "graph", "capture_mode": "thread_local", "failure": None,
                  "recovery": "", "capture_ms": 1.0 if graph == "graph" else 0.0,
                  "graph_nodes": 40 if graph == "graph" else 0},
        "results": results,
        "verification": {"argmax_checked": tokens, "argmax_mismatches": [], "logits": []},
        "roofline": {"bytes_per_token": bytes_per_token, "achieved_gbps": achieved,
                     "measured_gbps": 4000.0, "efficiency": achieved / 4000.0},
    }


def synthetic_result(seed: int = 1, scale: float = 1.0, tokens: int = 48,
                     phases: bool = True) -> dict:
    """A complete result document (schema 1.0) of a synthetic GPU run: runs eager (no phase
    timing), eager+phases and graph+phases (per-token phase samples unless phases=False)."""
    rng = random.Random(seed)
    runs = [synthetic_run("eager", "eager", rng, tokens, scale, False),
            synthetic_run("eager+phases", "eager", rng, tokens, scale * 1.01, phases),
            synthetic_run("graph+phases", "graph", rng, tokens, scale * 0.9, phases)]
    return {
        "schema_version": "1.0",
        "tool": {"name": "decodebench", "version": "0.0-test", "git_sha": "0123456789ab",
                 "build_type": "Release", "compiler": "test", "cuda": True},
        "environment": {"host": "test", "cpu": "Test CPU", "cores": 4, "memory_bytes": 1 << 34,
                        "os": "Test OS", "timestamp": "2026-01-02T03:04:05Z",
                        "gpu": {"name": "Test GPU"}},
        "config": {"tokens": {"value": tokens, "origin": "flag"},
                   "phase_timing": {"value": phases, "origin": "flag"}},
        "model": {"source": "synthetic", "name": "test-model (synthetic)",
                  "architecture": "synthetic", "file_type": "BF16", "parameters": 1_500_000,
                  "weight_bytes": 3_000_000, "bytes_per_token": 3_000_000,
                  "tensor_types": {"BF16": {"count": 10, "bytes": 3_000_000}},
                  "shape": {"layers": 4, "hidden": 256, "heads": 4, "kv_heads": 2,
                            "head_dim": 64, "ffn": 512, "vocab": 1024}},
        "backend": {"name": "cuda", "device": "Test GPU"},
        "prompt": {"ids": [1, 2, 3, 4]},
        "timing": {"load_ns": 1_000_000, "setup_ns": 2_000_000, "prefill_ns": 3_000_000},
        "runs": runs,
        "checks": {"graph_matches_eager": True, "phase_timing_overhead_ns": None},
        "bandwidth_gbps": 4000.0,
        "warnings": [],
        "exit_code": 0,
    }


def batched_result(batch: int, seed: int = 1, tokens: int = 24) -> dict:
    """A synthetic result whose runs decode `batch` sequences in lockstep: the step time grows
    slowly with the batch, so the aggregate tokens/s grows almost linearly."""
    doc = synthetic_result(seed=seed, scale=1.0 + 0.05 * (batch - 1), tokens=tokens,
                           phases=False)
    doc["config"]["batch"] = {"value": batch, "origin": "flag"}
    for run_doc in doc["runs"]:
        run_doc["batch"] = batch
        key = run_doc["key"]
        key["batch"] = batch
        key["id"] = key["id"].replace("|batch=1|", f"|batch={batch}|")
        results = run_doc["results"]
        median = results["stats"]["tpot_ns"]["median"]
        results["stats"]["aggregate_tokens_per_s"] = batch * 1e9 / median
        results["sequences"] = [
            {"index": i, "prompt_tokens": 4, "prompt_ids": [1, 2, 3, 4 + i],
             "tokens": [(7 * i + t) % 1024 for t in range(tokens + 1)],
             "tpot_ms_median": median / 1e6} for i in range(batch)]
    return doc


def batch_suite(batches: list) -> dict:
    """A sweep document (`decodebench --batch 1,2,... --json`) over `batches`."""
    configs = [{"index": i, "label": f"batch={b}", "args": ["--batch", str(b)], "wall_ns": 1,
                "status": "ok", "exit_code": 0, "error": None, "result": i}
               for i, b in enumerate(batches)]
    results = [batched_result(b, seed=i + 1) for i, b in enumerate(batches)]
    return {"schema_version": "1.0",
            "suite": {"name": "sweep", "description": "decodebench --batch", "wall_ns": 1,
                      "source": "command line", "configurations": len(batches)},
            "tool": results[0]["tool"],
            "environment": {"host": "test", "cpu": "Test CPU", "cores": 4, "os": "Test OS",
                            "timestamp": "2026-01-02T03:04:05Z", "gpu": {"name": "Test GPU"}},
            "configurations": configs, "results": results, "exit_code": 0}


def write_json(path: pathlib.Path, doc) -> pathlib.Path:
    path.write_text(json.dumps(doc))
    return path


# --- tests ---------------------------------------------------------------------------------------

class PlotTestCase(unittest.TestCase):
    """Each test gets a fresh temporary directory `self.tmp`."""

    def setUp(self):
        self.tmp = pathlib.Path(tempfile.mkdtemp(prefix="decodebench-plot-"))
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)

    def assertPng(self, path: pathlib.Path, min_width: int = 600, min_height: int = 300):
        self.assertTrue(path.is_file(), f"{path} was not written")
        size = path.stat().st_size
        self.assertGreater(size, MIN_PNG_BYTES, f"{path}: only {size} bytes")
        width, height = png_info(path)
        self.assertGreaterEqual(width, min_width, f"{path}: width {width}")
        self.assertGreaterEqual(height, min_height, f"{path}: height {height}")
        self.assertLess(max(width, height), 6000, f"{path}: {width}x{height} is absurdly large")
        return width, height

    def assertPlotted(self, proc: subprocess.CompletedProcess, expected: list):
        """The script succeeded, wrote exactly `expected` (paths) and printed them."""
        self.assertEqual(proc.returncode, 0, f"stdout: {proc.stdout}\nstderr: {proc.stderr}")
        printed = [pathlib.Path(line) for line in proc.stdout.splitlines()]
        self.assertEqual(sorted(printed), sorted(expected))
        for path in expected:
            self.assertPng(path)


class SyntheticResultTest(PlotTestCase):
    def test_fixture_matches_the_schema(self):
        path = write_json(self.tmp / "syn.json", synthetic_result())
        proc = run(VALIDATE, path)
        if proc.returncode == 77:
            self.skipTest("jsonschema is not installed")
        self.assertEqual(proc.returncode, 0, proc.stderr)

    def test_result_with_phase_samples(self):
        path = write_json(self.tmp / "syn.json", synthetic_result())
        out = self.tmp / "out"  # created by the script
        proc = run(PLOT, path, "--out", out)
        self.assertPlotted(proc, [out / "syn-latency.png", out / "syn-phases.png",
                                  out / "syn-histogram.png"])
        # phases: a bar panel and one per-token panel per run with samples, so taller
        _, latency_h = png_info(out / "syn-latency.png")
        _, phases_h = png_info(out / "syn-phases.png")
        self.assertGreater(phases_h, latency_h)

    def test_negative_gpu_time_samples_are_not_samples(self):
        # Older builds wrote gpu_ms = -1 per token for CPU phase timing.
        sys.path.insert(0, str(ROOT / "scripts"))
        import resultdoc
        run_doc = synthetic_result()["runs"][1]
        samples = run_doc["results"]["phase_samples"]
        self.assertIn("gpu_ms", resultdoc.phase_samples(run_doc))
        samples["gpu_ms"] = [-1.0] * len(samples["gpu_ms"])
        got = resultdoc.phase_samples(run_doc)
        self.assertNotIn("gpu_ms", got)
        self.assertEqual(got["wait"], samples["wait"])

    def test_phase_medians_without_per_token_samples(self):
        doc = synthetic_result()
        for run_doc in doc["runs"]:
            run_doc["results"]["phase_samples"] = None  # only results.phases summaries
        path = write_json(self.tmp / "med.json", doc)
        proc = run(PLOT, path, "--out", self.tmp)
        self.assertPlotted(proc, [self.tmp / "med-latency.png", self.tmp / "med-phases.png",
                                  self.tmp / "med-histogram.png"])

    def test_no_phase_timing_writes_no_phases_plot(self):
        path = write_json(self.tmp / "plain.json", synthetic_result(phases=False))
        proc = run(PLOT, path, "--out", self.tmp)
        self.assertPlotted(proc, [self.tmp / "plain-latency.png",
                                  self.tmp / "plain-histogram.png"])
        self.assertIn("phase", proc.stderr)

    def test_default_output_directory_is_the_current_one(self):
        path = write_json(self.tmp / "syn.json", synthetic_result(tokens=12))
        work = self.tmp / "cwd"
        work.mkdir()
        proc = run(PLOT, path, cwd=work)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        for name in ("syn-latency.png", "syn-phases.png", "syn-histogram.png"):
            self.assertPng(work / name)

    def test_suite_document(self):
        def config(index, label, result):
            return {"index": index, "label": label, "args": [], "wall_ns": 1,
                    "status": "ok" if result is not None else "failed",
                    "exit_code": 0 if result is not None else 3,
                    "error": None if result is not None else "test failure", "result": result}

        suite = {"schema_version": "1.0",
                 "suite": {"name": "test", "description": "", "source": "command line",
                           "configurations": 3, "wall_ns": 1},
                 "configurations": [config(0, "phase_timing=true", 0),
                                    config(1, "layers=0", None),
                                    config(2, "phase_timing=false", 1)],
                 "results": [synthetic_result(seed=1), synthetic_result(seed=2, phases=False)],
                 "exit_code": 3}
        path = write_json(self.tmp / "suite.json", suite)
        proc = run(PLOT, path, "--out", self.tmp)
        self.assertPlotted(proc, [self.tmp / "suite-1-latency.png",
                                  self.tmp / "suite-1-phases.png",
                                  self.tmp / "suite-1-histogram.png",
                                  self.tmp / "suite-2-latency.png",
                                  self.tmp / "suite-2-histogram.png"])
        proc = run(README, path)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("`phase_timing=false`", proc.stdout)

    def test_compare(self):
        base = write_json(self.tmp / "base.json", synthetic_result(seed=1))
        new_doc = synthetic_result(seed=2, scale=0.9)
        new_doc["runs"].pop(0)  # a run only in base: noted, not compared
        new = write_json(self.tmp / "new.json", new_doc)
        proc = run(PLOT, base, new, "--out", self.tmp)
        self.assertPlotted(proc, [self.tmp / "compare-base-vs-new.png"])
        self.assertIn("only in", proc.stderr)

    def test_compare_suites(self):
        base = write_json(self.tmp / "a.json", {"results": [synthetic_result(seed=1)]})
        new = write_json(self.tmp / "b.json", {"results": [synthetic_result(seed=3)]})
        proc = run(PLOT, base, new, "--out", self.tmp)
        self.assertPlotted(proc, [self.tmp / "compare-a-vs-b.png"])

    def test_results_readme(self):
        doc = synthetic_result()
        path = write_json(self.tmp / "syn.json", doc)
        proc = run(README, path)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        text = proc.stdout
        for expected in ("test-model (synthetic)", "cuda · Test GPU", "| eager |",
                         "| graph+phases |", "Phase medians", "roofline"):
            self.assertIn(expected, text)
        # efficiency = achieved / 4000 GB/s, printed with one decimal
        eager = self.table_row(text, "eager")
        self.assertEqual(eager[6], f"{doc['runs'][0]['roofline']['efficiency'] * 100:.1f} %")

    def test_results_readme_without_measured_bandwidth(self):
        # CPU runs write null for the bandwidth they did not measure; builds before e4a730e wrote
        # 0. Either way the efficiency cell is '–', never 0 % or a crash.
        doc = synthetic_result()
        doc["bandwidth_gbps"] = None
        doc["runs"][0]["roofline"].update(measured_gbps=None, efficiency=None)
        doc["runs"][1]["roofline"].update(measured_gbps=0.0, efficiency=0.0)
        del doc["runs"][2]["roofline"]["measured_gbps"]
        path = write_json(self.tmp / "cpu.json", doc)
        proc = run(README, path)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        for label in ("eager", "eager+phases", "graph+phases"):
            row = self.table_row(proc.stdout, label)
            self.assertEqual(row[6], "–", row)
            self.assertRegex(row[5], r"^[0-9,]+\.[0-9]$", row)  # achieved GB/s still printed

    def table_row(self, text: str, label: str) -> list:
        """The cells of the markdown table row whose first cell is `label` (first match)."""
        for line in text.splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if cells and cells[0] == label:
                return cells
        raise AssertionError(f"no table row '{label}' in:\n{text}")


class BatchScalingTest(PlotTestCase):
    """Sweeps over --batch: a scaling plot besides the per-entry plots."""

    def test_results_readme_of_a_batched_run(self):
        # A sample of a batched run is one lockstep step (one token of each of M sequences):
        # the table says so and adds the batch and the aggregate tokens/s.
        doc = batched_result(4)
        path = write_json(self.tmp / "b4.json", doc)
        proc = run(README, path)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("| run | batch M | aggregate tokens/s | tokens/s per sequence | "
                      "step median (µs) |", proc.stdout)
        self.assertIn("of weights read per step", proc.stdout)
        self.assertNotIn("TPOT median", proc.stdout)
        stats = doc["runs"][0]["results"]["stats"]
        row = [c.strip() for c in next(line for line in proc.stdout.splitlines()
                                       if line.startswith("| eager |")).strip("|").split("|")]
        self.assertEqual(row[1], "4")
        self.assertEqual(row[2], f"{4e9 / stats['tpot_ns']['median']:,.1f}")
        self.assertEqual(row[3], f"{stats['tokens_per_s']:,.1f}")
        # batch 1: the per-token table as before
        proc = run(README, write_json(self.tmp / "b1.json", synthetic_result()))
        self.assertIn("| run | tokens/s | TPOT median (µs) |", proc.stdout)
        self.assertIn("of weights read per token", proc.stdout)

    def test_batch_fixture_matches_the_schema(self):
        path = write_json(self.tmp / "sweep.json", batch_suite([1, 4]))
        proc = run(VALIDATE, path)
        if proc.returncode == 77:
            self.skipTest("jsonschema is not installed")
        self.assertEqual(proc.returncode, 0, proc.stderr)

    def test_batch_sweep_writes_a_scaling_plot(self):
        batches = [1, 2, 4, 8, 16]
        path = write_json(self.tmp / "sweep.json", batch_suite(batches))
        proc = run(PLOT, path, "--out", self.tmp)
        expected = [self.tmp / "sweep-batch-scaling.png"]
        for i in range(len(batches)):
            expected += [self.tmp / f"sweep-{i + 1}-latency.png",
                         self.tmp / f"sweep-{i + 1}-histogram.png"]
        self.assertPlotted(proc, expected)
        width, height = png_info(self.tmp / "sweep-batch-scaling.png")
        self.assertGreater(width, height)

    def test_one_batch_size_writes_no_scaling_plot(self):
        path = write_json(self.tmp / "one.json", batch_suite([4]))
        proc = run(PLOT, path, "--out", self.tmp)
        self.assertPlotted(proc, [self.tmp / "one-1-latency.png", self.tmp / "one-1-histogram.png"])

    def test_older_documents_without_batch_count_as_batch_one(self):
        suite = batch_suite([1, 8])
        for run_doc in suite["results"][0]["runs"]:  # as written before batched decode
            del run_doc["batch"]
            del run_doc["results"]["sequences"]
            del run_doc["results"]["stats"]["aggregate_tokens_per_s"]
        path = write_json(self.tmp / "old.json", suite)
        proc = run(PLOT, path, "--out", self.tmp)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn(str(self.tmp / "old-batch-scaling.png"), proc.stdout.splitlines())
        self.assertPng(self.tmp / "old-batch-scaling.png")


class BinaryResultTest(PlotTestCase):
    """A real (small) CPU result from the decodebench binary."""

    def setUp(self):
        super().setUp()
        binary = os.environ.get("DECODEBENCH_BIN")
        if not binary or not os.access(binary, os.X_OK):
            self.skipTest("DECODEBENCH_BIN does not name the built decodebench binary")
        self.result = self.tmp / "r.json"
        proc = subprocess.run([binary, "--preset", "smollm2-135m", "--layers", "2",
                               "--vocab", "512", "--ffn", "256", "--tokens", "8",
                               "--prompt-tokens", "4", "--backend", "cpu",
                               "--json", str(self.result), "-q"],
                              capture_output=True, text=True, timeout=300)
        self.assertEqual(proc.returncode, 0, f"decodebench failed: {proc.stderr}")

    def test_plots(self):
        proc = run(PLOT, self.result, "--out", self.tmp)
        self.assertPlotted(proc, [self.tmp / "r-latency.png", self.tmp / "r-histogram.png"])
        self.assertFalse((self.tmp / "r-phases.png").exists())

    def test_compare_with_itself(self):
        proc = run(PLOT, self.result, self.result, "--out", self.tmp)
        self.assertPlotted(proc, [self.tmp / "compare-r-vs-r.png"])

    def test_batch_sweep_of_the_binary(self):
        sweep = self.tmp / "b.json"
        proc = subprocess.run([os.environ["DECODEBENCH_BIN"], "--preset", "smollm2-135m",
                               "--layers", "2", "--vocab", "512", "--ffn", "256", "--tokens", "6",
                               "--prompt-tokens", "4", "--backend", "cpu", "--batch", "1,2,4",
                               "--json", str(sweep), "-q"],
                              capture_output=True, text=True, timeout=300)
        self.assertEqual(proc.returncode, 0, f"decodebench failed: {proc.stderr}")
        proc = run(PLOT, sweep, "--out", self.tmp)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn(str(self.tmp / "b-batch-scaling.png"), proc.stdout.splitlines())
        self.assertPng(self.tmp / "b-batch-scaling.png")


class ErrorTest(PlotTestCase):
    """Unusable input: exit 2, a message naming the file and the problem, no traceback."""

    def assertFails(self, args: list, *expected: str, code: int = 2):
        out = self.tmp / "out"
        proc = run(PLOT, *args, "--out", out)
        self.assertEqual(proc.returncode, code, f"stdout: {proc.stdout}\nstderr: {proc.stderr}")
        self.assertNotIn("Traceback", proc.stderr)
        for text in expected:
            self.assertIn(text, proc.stderr)
        self.assertEqual(list(out.glob("*.png")) if out.exists() else [], [])

    def test_missing_file(self):
        missing = self.tmp / "missing.json"
        self.assertFails([missing], str(missing), "no such file")

    def test_not_json(self):
        path = self.tmp / "text.json"
        path.write_text("decode step took 7 ms\n")
        self.assertFails([path], str(path), "not JSON")

    def test_binary_garbage(self):
        path = self.tmp / "garbage.json"
        path.write_bytes(PNG_MAGIC + bytes(range(256)))
        self.assertFails([path], str(path), "not JSON")

    def test_wrong_schema_version(self):
        doc = synthetic_result(tokens=8)
        doc["schema_version"] = "2.0"
        path = write_json(self.tmp / "v2.json", doc)
        self.assertFails([path], str(path), "schema_version", "2.0")

    def test_missing_schema_version(self):
        doc = synthetic_result(tokens=8)
        del doc["schema_version"]
        path = write_json(self.tmp / "nover.json", doc)
        self.assertFails([path], str(path), "schema_version")

    def test_no_runs(self):
        doc = synthetic_result(tokens=8)
        doc["runs"] = []
        path = write_json(self.tmp / "empty.json", doc)
        self.assertFails([path], str(path), "no runs")
        del doc["runs"]
        path = write_json(self.tmp / "noruns.json", doc)
        self.assertFails([path], str(path), "no runs")

    def test_run_without_samples(self):
        doc = synthetic_result(tokens=8)
        doc["runs"][1]["results"]["samples_ns"] = []
        path = write_json(self.tmp / "nosamples.json", doc)
        self.assertFails([path], str(path), "eager+phases", "samples")

    def test_top_level_not_an_object(self):
        path = write_json(self.tmp / "list.json", [synthetic_result(tokens=8)])
        self.assertFails([path], str(path), "not a decodebench result")

    def test_bad_suites(self):
        path = write_json(self.tmp / "nosuite.json", {"results": []})
        self.assertFails([path], str(path), "no results")
        bad = synthetic_result(tokens=8)
        bad["schema_version"] = "0.9"
        path = write_json(self.tmp / "badentry.json", {"results": [synthetic_result(), bad]})
        self.assertFails([path], f"{path} results[1]", "schema_version")

    def test_compare_bad_second_file(self):
        good = write_json(self.tmp / "good.json", synthetic_result(tokens=8))
        missing = self.tmp / "gone.json"
        self.assertFails([good, missing], str(missing), "no such file")

    def test_compare_without_common_runs(self):
        base = write_json(self.tmp / "base.json", synthetic_result(tokens=8))
        other = synthetic_result(tokens=8)
        for run_doc in other["runs"]:
            run_doc["key"]["id"] += "|other"
        new = write_json(self.tmp / "new.json", other)
        self.assertFails([base, new], str(base), str(new), "no runs in common")

    def test_usage(self):
        self.assertFails([], "usage")
        good = write_json(self.tmp / "good.json", synthetic_result(tokens=8))
        self.assertFails([good, good, good], "usage")

    def test_results_readme_bad_input(self):
        missing = self.tmp / "missing.json"
        proc = run(README, missing)
        self.assertEqual(proc.returncode, 2)
        self.assertIn(str(missing), proc.stderr)

    def test_missing_matplotlib_exits_77(self):
        fake = self.tmp / "fake"
        (fake / "matplotlib").mkdir(parents=True)
        (fake / "matplotlib" / "__init__.py").write_text(
            'raise ImportError("matplotlib hidden by test_plot.py")\n')
        env = dict(os.environ, PYTHONPATH=str(fake))
        good = write_json(self.tmp / "good.json", synthetic_result(tokens=8))
        proc = run(PLOT, good, "--out", self.tmp, env=env)
        self.assertEqual(proc.returncode, 77, proc.stderr)
        self.assertIn("matplotlib", proc.stderr)
        self.assertEqual(list(self.tmp.glob("*.png")), [])


if __name__ == "__main__":
    try:
        import matplotlib  # noqa: F401  (only to see whether the scripts can plot)
    except ImportError:
        print("SKIP: matplotlib is not installed (pip install matplotlib); "
              "scripts/plot cannot be tested", file=sys.stderr)
        sys.exit(77)
    unittest.main()
