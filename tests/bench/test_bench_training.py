"""`python -m resispec.bench training` on a tiny target: both allocator settings measured in fresh
processes, in ABBA order, ending on the same weights."""

from resispec.bench import training
from resispec.models import tiny


def test_training_bench_alternates_settings_and_compares_weights(tmp_path, capsys):
    target = tiny.build("layers=2,hidden=64,seed=1", tmp_path / "target")
    assert training.main(["--target", str(target), "--rounds", "2", "--steps", "2", "--warmup", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    order = [line.split(":")[0] for line in lines if line.startswith("round")]
    assert order == [
        "round 1 huge pages off",
        "round 1 huge pages on ",
        "round 2 huge pages on ",
        "round 2 huge pages off",
    ]
    assert lines[-1].startswith("seconds per step, huge pages on / off: ")
    assert lines[-1].endswith("(95%, 2 paired rounds); same weights: True")
    assert lines[-2].startswith("EAGLE-head training, 1 thread; CPU ")
