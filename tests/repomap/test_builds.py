"""Background builds shared per project: the newest result, reuse of the previous one, failures."""

from __future__ import annotations

from pathlib import Path

from swecli.repomap.builds import BuildFailed, Builds


def test_one_build_per_project_is_shared_and_the_previous_result_is_offered(tmp_path: Path) -> None:
    seen: list[object] = []

    def build(root: Path, previous: int | None) -> int:
        seen.append(previous)
        return (previous or 0) + 1

    builds: Builds[int] = Builds(build, "test-build")
    assert builds.latest(tmp_path) is None
    first = builds.background(tmp_path)
    assert builds.background(tmp_path) is first  # running or just finished: shared, not started again
    assert first.wait(10) == 1 and builds.latest(tmp_path) == 1
    again = builds.background(tmp_path, max_age=0.0)  # finished longer ago than max_age: a fresh build
    assert again is not first and again.wait(10) == 2
    assert seen == [None, 1]  # the second build was handed the first one's result


def test_a_failed_build_says_why_and_leaves_no_result(tmp_path: Path) -> None:
    def refused(root: Path, previous: None) -> None:
        raise BuildFailed("the map could not be built (no files)")

    def broken(root: Path, previous: None) -> None:
        raise OSError("disk gone")

    said = Builds(refused, "test-refused").background(tmp_path)
    assert said.wait(10) is None and said.error == "the map could not be built (no files)"
    crashed = Builds(broken, "test-broken").background(tmp_path)
    assert crashed.wait(10) is None and crashed.error == "OSError: disk gone"
