"""What a failed job says about resuming it from a checkpoint."""

from __future__ import annotations

from weir.core.checkpoint import ExternalizedCheckpointRetention
from weir.jobmanager.checkpoint.resume_hint import resume_hint

R = ExternalizedCheckpointRetention


class TestResumeHint:
    def test_a_kept_checkpoint_comes_with_the_exact_command(self):
        hint = resume_hint(R.DELETE_ON_CANCELLATION, "file:///ck/j/chk-7", "job.py --in 'a b'")
        assert "weir run -s file:///ck/j/chk-7 job.py --in 'a b'" in hint
        assert "DELETE_ON_CANCELLATION" in hint

    def test_with_flinks_default_it_names_the_setting_that_keeps_them(self):
        hint = resume_hint(R.NO_EXTERNALIZED_CHECKPOINTS, "file:///ck/j/chk-7", "job.py")
        assert "deleted" in hint and "NO_EXTERNALIZED_CHECKPOINTS" in hint
        assert "execution.checkpointing.externalized-checkpoint-retention" in hint
        assert "set_externalized_checkpoint_retention" in hint
        assert "weir run -s <its chk-N directory> job.py" in hint
        assert "chk-7" not in hint  # it is gone

    def test_kept_but_none_completed(self):
        hint = resume_hint(R.RETAIN_ON_CANCELLATION, "", "job.py")
        assert "none to resume from" in hint and "weir run" not in hint

    def test_an_unknown_program_is_named_as_such(self):
        hint = resume_hint(R.RETAIN_ON_CANCELLATION, "s3://b/chk-1", "")
        assert "weir run -s s3://b/chk-1 <your program and its arguments>" in hint
