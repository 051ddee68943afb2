"""The maintained probes of docs/probes/ still fit the tree they measure.

Run from the repository root: python3 tests/python/test_probes.py (CTest does, label python).
Exit status 77 (CTest: skipped) when this is not a git checkout or git is missing.

Why: a probe is used in a device session, where a patch that no longer applies or a script with a
syntax error costs device time to find out (round 36 found kernel-timeline.patch broken by a
renamed kernel argument). Checked: kernel-timeline.patch applies to the working tree (`git apply
--check`; split-in-gemv.patch is an archived experiment, made against 67c6bc1, and is not
checked); the shell scripts parse (`bash -n`); the Python probes compile; and every mode that
ring-ab.sh's case statement runs is named in its usage line and described in its header, and
the other way round; gguf-row.sh's prompt is the README's (round 40's GGUF runs lost its final
newline to a `$(printf ...)`), and its halves join back to the file.
"""
import pathlib
import py_compile
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PROBES = ROOT / "docs" / "probes"


def is_git_checkout() -> bool:
    if shutil.which("git") is None:
        return False
    done = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--is-inside-work-tree"],
                          capture_output=True, text=True, check=False)
    return done.returncode == 0 and done.stdout.strip() == "true"


class Probes(unittest.TestCase):
    def test_timeline_patch_applies(self):
        done = subprocess.run(
            ["git", "-C", str(ROOT), "apply", "--check", str(PROBES / "kernel-timeline.patch")],
            capture_output=True, text=True, check=False)
        self.assertEqual(done.returncode, 0,
                         "docs/probes/kernel-timeline.patch no longer applies; refresh it "
                         "(docs/probes/README.md):\n" + done.stderr)

    def test_shell_scripts_parse(self):
        scripts = sorted(PROBES.glob("*.sh"))
        self.assertGreaterEqual(len(scripts), 2)
        for script in scripts:
            done = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True,
                                  check=False)
            self.assertEqual(done.returncode, 0, f"{script.name}: {done.stderr}")

    def test_python_probes_compile(self):
        with tempfile.TemporaryDirectory() as tmp:
            for py in sorted(PROBES.glob("*.py")):
                py_compile.compile(str(py), cfile=str(pathlib.Path(tmp) / (py.name + "c")),
                                   doraise=True)

    def test_ring_ab_modes_are_documented(self):
        text = (PROBES / "ring-ab.sh").read_text()
        body = text[text.index("case $mode in"):]
        run = set(re.findall(r"^  ([a-z0-9]+)\)$", body, re.M))
        usage = re.search(r"ring-ab\.sh BIN_DIR ([a-z0-9|]+)", text)
        self.assertIsNotNone(usage, "no usage line")
        named = set(usage.group(1).split("|"))
        header = text[:text.index("set -u")]
        described = set(re.findall(r"^#   ([a-z0-9]+)  ", header, re.M))  # name, 2+ spaces
        self.assertGreaterEqual(len(run), 10)
        self.assertEqual(run, named, "modes run vs the usage line")
        self.assertEqual(run, described, "modes run vs the header's descriptions")

    def test_gguf_row_uses_the_readme_prompt(self):
        """gguf-row.sh's prompt is the README's milestone prompt, final newline included."""
        pattern = re.compile(r"^prompt=(\$'[^']*')$", re.M)
        readme = pattern.search((ROOT / "README.md").read_text())
        script = pattern.search((PROBES / "gguf-row.sh").read_text())
        self.assertIsNotNone(readme, "no prompt=$'...' line in README.md")
        self.assertIsNotNone(script, "no prompt=$'...' line in gguf-row.sh")
        self.assertEqual(script.group(1), readme.group(1))
        self.assertTrue(script.group(1).endswith("\\n'"), script.group(1))

    def test_gguf_row_halves_join_back(self):
        """halves then join gives the file back (odd size), and a changed half is refused."""
        with tempfile.TemporaryDirectory() as tmp:
            tmp = pathlib.Path(tmp)
            model = tmp / "m.gguf"
            model.write_bytes(bytes(range(256)) * 4 + b"odd")
            run = lambda *a: subprocess.run(["bash", str(PROBES / "gguf-row.sh"), *map(str, a)],
                                            capture_output=True, text=True, check=False)
            done = run("halves", model, tmp / "parts")
            self.assertEqual(done.returncode, 0, done.stderr)
            self.assertEqual((tmp / "parts/a/p1").stat().st_size, 514)
            self.assertEqual((tmp / "parts/b/p2").stat().st_size, 513)
            done = run("join", tmp / "parts/a/p1", tmp / "parts/b", tmp / "joined.gguf")
            self.assertEqual(done.returncode, 0, done.stderr)
            self.assertEqual((tmp / "joined.gguf").read_bytes(), model.read_bytes())
            (tmp / "parts/b/p2").write_bytes(b"x" * 513)
            done = run("join", tmp / "parts/a/p1", tmp / "parts/b", tmp / "bad.gguf")
            self.assertEqual(done.returncode, 1)
            self.assertIn("does not match its sha256", done.stderr)

    def test_gguf_row_parts_join_back(self):
        """parts then join-parts gives the file back; pieces out of order, a changed piece and a
        count that is not a number are refused."""
        with tempfile.TemporaryDirectory() as tmp:
            tmp = pathlib.Path(tmp)
            model = tmp / "m.gguf"
            model.write_bytes(bytes(range(256)) * 4 + b"odd")  # 1,027 bytes
            run = lambda *a: subprocess.run(["bash", str(PROBES / "gguf-row.sh"), *map(str, a)],
                                            capture_output=True, text=True, check=False)
            done = run("parts", model, tmp / "parts", 3)
            self.assertEqual(done.returncode, 0, done.stderr)
            pieces = [tmp / f"parts/{i}/p" for i in (1, 2, 3)]
            self.assertEqual([p.stat().st_size for p in pieces], [343, 343, 341])
            done = run("join-parts", tmp / "joined.gguf", tmp / "parts/3/sha256", *pieces)
            self.assertEqual(done.returncode, 0, done.stderr)
            self.assertEqual((tmp / "joined.gguf").read_bytes(), model.read_bytes())
            done = run("join-parts", tmp / "swapped.gguf", tmp / "parts/3/sha256",
                       pieces[1], pieces[0], pieces[2])
            self.assertEqual(done.returncode, 1)
            self.assertIn("does not match its sha256", done.stderr)
            pieces[2].write_bytes(b"x" * 341)
            done = run("join-parts", tmp / "bad.gguf", tmp / "parts/3/sha256", *pieces)
            self.assertEqual(done.returncode, 1)
            done = run("parts", model, tmp / "none", "three")
            self.assertEqual(done.returncode, 2)
            self.assertIn("not a number of pieces", done.stderr)

    def test_sm_balance_counts_ctas_per_sm(self):
        """sm_balance.py on a made-up step: 224 CTAs of one GEMV on 132 SMs (92 SMs with two, 40
        with one), the lone CTAs released at 0 and done at 20 µs, the others done at 30 µs."""
        try:
            import numpy as np
        except ImportError:
            self.skipTest("numpy is missing")
        dt = np.dtype([("t0", "<u8"), ("tw", "<u8"), ("t1", "<u8"), ("m1", "<u8"),
                       ("m2", "<u8"), ("tag", "<u4"), ("block", "<u4"), ("rows", "<u4"),
                       ("cols", "<u4"), ("sm", "<u4"), ("grid", "<u4")])
        recs = []
        for step in range(3):
            t = 1_000_000 * (step + 1)
            recs.append((t, t, t + 1000, 0, 0, 14, 0, 0, 0, 0, 1))  # the embedding kernel
            lone = set(range(92, 132))
            for c in range(224):
                sm = c % 132
                end = t + 2000 + (20_000 if sm in lone else 30_000)
                recs.append((t + 1500 + c, t + 2000, end, 0, 0, 2, c, 3584, 18944, sm, 224))
        with tempfile.TemporaryDirectory() as tmp:
            path = pathlib.Path(tmp) / "made-up.bin"
            np.array(recs, dtype=dt).tofile(path)
            done = subprocess.run([sys.executable, str(PROBES / "sm_balance.py"), str(path)],
                                  capture_output=True, text=True, check=False)
        self.assertEqual(done.returncode, 0, done.stderr)
        row = [line for line in done.stdout.splitlines() if line.startswith("direct 3584x18944")]
        self.assertEqual(len(row), 1, done.stdout)
        cells = row[0].split()
        # label (3 words), n, ctas, SMs, 1/SM, 2+/SM, span, dur@1, dur@2+, idle@1, espread
        self.assertEqual(cells[3:8], ["1", "224", "132", "40", "92"], done.stdout)
        self.assertEqual(cells[8:], ["30.50", "20.00", "30.00", "10.00", "10.00"], done.stdout)


if __name__ == "__main__":
    if not is_git_checkout():
        print("skipped: not a git checkout (or no git)")
        sys.exit(77)
    unittest.main()
