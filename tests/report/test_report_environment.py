"""The report's hardware table says whose record it shows: the run it describes, another run, or none."""

from resispec.report.environment import environment_note


def test_a_record_of_the_described_run_is_named():
    note = environment_note({"run_name": "paper-gpu", "device": "cuda"}, {"run_name": "paper-gpu"})
    assert note == "Recorded by run 'paper-gpu' where it ran."


def test_a_record_of_another_run_is_flagged():
    note = environment_note({"run_name": "embedded-cpu-default"}, {"run_name": "paper-gpu"})
    assert note == (
        "Recorded by run 'embedded-cpu-default', not by the run this report describes ('paper-gpu')."
    )


def test_no_record_says_where_the_table_comes_from():
    assert environment_note(None, {"run_name": "x"}).startswith("Collected where the report was built")
