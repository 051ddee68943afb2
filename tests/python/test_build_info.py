"""cmake/BuildInfo.cmake names a probe build in the build type it bakes into the binary.

Run from the repository root: python3 tests/python/test_build_info.py (CTest does, label python).
Exit status 77 (CTest: skipped) when cmake is missing.

Why: a probe build (e.g. `cmake -DDECODEBENCH_X_DIGITS=1`: one x' digit, docs/performance.md round
46) computes other numbers than the default build, so its result files must say so
(`tool.build_type`, `--version` through build_info::kProbe, and the tables and plots that
scripts/resultdoc.py's tool_version labels), or its figures could be taken for a default build's.
"""
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import resultdoc  # noqa: E402  (scripts/ is not a package)


def generate(probe: str) -> dict:
    """Runs BuildInfo.cmake as the build does; returns the header's constants by name."""
    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp) / "build_info.hpp"
        subprocess.run(
            ["cmake", f"-DSRC={ROOT}", f"-DOUT={out}", "-DPROJECT_VERSION=0.1.0",
             "-DCMAKE_BUILD_TYPE=Release", "-DCMAKE_CXX_COMPILER_ID=GNU",
             "-DCMAKE_CXX_COMPILER_VERSION=12.2.0", "-DCMAKE_CUDA_COMPILER_VERSION=13.0.88",
             f"-DDECODEBENCH_PROBE={probe}", "-P", str(ROOT / "cmake" / "BuildInfo.cmake")],
            check=True, capture_output=True, text=True)
        text = out.read_text(encoding="utf-8")
    return dict(re.findall(r'inline constexpr const char\* (\w+) = "([^"]*)";', text))


class BuildInfoTest(unittest.TestCase):
    def test_default_build(self):
        info = generate("")
        self.assertEqual(info["kBuildType"], "Release")
        self.assertEqual(info["kProbe"], "")

    def test_probe_build_is_named(self):
        info = generate("DECODEBENCH_X_DIGITS=1")
        self.assertEqual(info["kBuildType"], "Release (probe build: DECODEBENCH_X_DIGITS=1)")
        self.assertEqual(info["kProbe"], "DECODEBENCH_X_DIGITS=1")
        self.assertEqual(info["kVersion"], "0.1.0")

    def test_documents_name_a_probe_build(self):
        """Tables and plots (scripts/resultdoc.py's tool_version) carry the probe's name."""
        tool = {"version": "0.1.0", "git_sha": "0f3385a12345",
                "build_type": "Release (probe build: DECODEBENCH_X_DIGITS=1)"}
        self.assertEqual(resultdoc.tool_version({"tool": tool}),
                         "decodebench 0.1.0 (0f3385a12345, probe build: DECODEBENCH_X_DIGITS=1)")
        tool["build_type"] = "Release"
        self.assertEqual(resultdoc.tool_version({"tool": tool}), "decodebench 0.1.0 (0f3385a12345)")


if __name__ == "__main__":
    if shutil.which("cmake") is None:
        print("cmake is missing: skipped")
        sys.exit(77)
    unittest.main()
