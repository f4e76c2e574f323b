"""The GPU benchmark records the outcome of the gpu tests it ran beside: counts and failed names read
from pytest's JUnit XML, so a failed test shows in the results file and the README."""

from __future__ import annotations

from pathlib import Path

from benchmarks.bge_m3_gpu import junit_outcome

XML = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" tests="4" failures="1" errors="1" skipped="1">
<testcase classname="tests.gpu.t" name="test_ok" time="1.0"/>
<testcase classname="tests.gpu.t" name="test_bad" time="1.0"><failure message="x">boom</failure></testcase>
<testcase classname="tests.gpu.t" name="test_broken" time="1.0"><error message="y">err</error></testcase>
<testcase classname="tests.gpu.t" name="test_later" time="0.0"><skipped message="z"/></testcase>
</testsuite></testsuites>
"""


def test_counts_and_names_come_from_the_xml(tmp_path: Path) -> None:
    path = tmp_path / "gpu_tests.xml"
    path.write_text(XML, encoding="utf-8")
    assert junit_outcome(path) == {
        "tests": 4,
        "passed": 1,
        "failed": ["test_bad", "test_broken"],
        "skipped": ["test_later"],
    }
