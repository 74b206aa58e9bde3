"""plan.budget: the verdict on a plan against a device's limits and measured budget."""

from __future__ import annotations

from scellis.plan.budget import GREEN_SHARE, Budget, DeviceLimits, verdict

LIMITS = DeviceLimits(max_buffer_size=1 << 28, max_storage_binding=1 << 27, max_storage_buffers=8)
MEASURED = Budget(1_000_000, "a test budget")


def test_green_within_the_share_of_a_measured_budget() -> None:
    result = verdict(int(GREEN_SHARE * 1_000_000), 1000, 4, LIMITS, MEASURED)
    assert result.color == "green"
    assert result.reasons == ("takes 800,000 of a budget of 1,000,000 bytes (80.0%; a test budget)",)


def test_yellow_with_little_headroom_or_no_measurement() -> None:
    tight = verdict(900_000, 1000, 4, LIMITS, MEASURED)
    assert tight.color == "yellow" and "less than 20% of it left free" in tight.reasons[0]
    unknown = verdict(10, 10, 1, LIMITS, Budget(None, "no probe"))
    assert unknown.color == "yellow"  # never green by assumption
    assert unknown.reasons == ("the device's memory could not be measured: no probe",)


def test_red_names_every_limit_it_breaks() -> None:
    result = verdict(2_000_000, (1 << 28) + 4, 9, LIMITS, MEASURED)
    assert result.color == "red"
    assert result.reasons == (
        f"an allocation of {(1 << 28) + 4:,} bytes exceeds the largest storage binding ({1 << 27:,})",
        f"an allocation of {(1 << 28) + 4:,} bytes exceeds the largest buffer ({1 << 28:,})",
        "a kernel binds 9 buffers; a shader stage may bind 8",
        "needs 2,000,000 bytes, more than the budget of 1,000,000 (a test budget)",
    )
    assert verdict(10, 10, 1, LIMITS, Budget(5, "tiny")).color == "red"  # over even an unlimited-looking device
