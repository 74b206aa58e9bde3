"""scellis.manifest.claims.differences: every field path where a pinned JSON and a recomputed one differ
(changed, added, removed, of another type), in the pinned order, leaving out the unchecked paths."""

from __future__ import annotations

from scellis.manifest.claims import ABSENT, Difference, differences, unchecked_lines


def test_names_each_changed_added_and_removed_field_by_path() -> None:
    pinned = {"a": 1, "b": {"c": [1, 2, 3], "d": "x"}, "gone": 0}
    here = {"a": 1, "b": {"c": [1, 5], "d": "x", "new": True}}
    assert differences(pinned, here, {}) == [
        Difference("b.c[1]", 2, 5),
        Difference("b.c[2]", 3, ABSENT),
        Difference("b.new", ABSENT, True),
        Difference("gone", 0, ABSENT),
    ]
    assert str(Difference("b.c[1]", 2, 5)) == "b.c[1]: pinned 2, recomputed 5 (difference +3)"
    assert str(Difference("b.c[2]", 3, ABSENT)) == "b.c[2]: pinned 3, recomputed nothing"


def test_a_value_of_another_type_differs_even_when_python_calls_them_equal() -> None:
    assert differences({"n": 1}, {"n": True}, {}) == [Difference("n", 1, True)]
    assert differences({"n": [1]}, {"n": {"0": 1}}, {}) == [Difference("n", [1], {"0": 1})]


def test_unchecked_paths_are_left_out_and_listed_by_reason() -> None:
    pinned = {"env": {"browser": "x", "python": "y"}, "plan": {"bytes": 1, "verdict": "red"}}
    unchecked = {"env.browser": "where", "env.python": "where", "plan.verdict": "memory", "absent.path": "n/a"}
    here = {"env": {}, "plan": {"bytes": 1}}
    assert differences(pinned, here, unchecked) == []
    assert unchecked_lines(unchecked, pinned) == [
        "not checked: env.browser, env.python (where)",
        "not checked: plan.verdict (memory)",
    ]


def test_deep_values_are_walked_without_recursion() -> None:
    pinned: object = 1
    here: object = 2
    for _ in range(5_000):  # beyond the interpreter's recursion limit
        pinned, here = [pinned], [here]
    (found,) = differences(pinned, here, {})
    assert found.path.endswith("[0][0]") and (found.pinned, found.found) == (1, 2)
