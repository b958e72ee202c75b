"""``ExecutionConfig``: per-job settings reached through ``env.get_config()``."""

from __future__ import annotations

__all__ = ["ExecutionConfig"]

# Flink's default (pipeline.auto-watermark-interval): how often periodic watermarks are emitted.
_DEFAULT_AUTO_WATERMARK_INTERVAL_MS = 200


class ExecutionConfig:
    """Job parameters, watermark interval and object reuse, as PyFlink's ExecutionConfig."""

    def __init__(self) -> None:
        self._global_job_parameters: dict[str, str] = {}
        self._auto_watermark_interval_ms = _DEFAULT_AUTO_WATERMARK_INTERVAL_MS
        self._object_reuse = False
        self._parallelism: int | None = None
        self._max_parallelism: int | None = None

    def set_global_job_parameters(self, global_parameters_dict: dict[str, str]) -> ExecutionConfig:
        """What ``RuntimeContext.get_job_parameter(key, default_value)`` returns in every task."""
        self._global_job_parameters = {str(k): str(v) for k, v in global_parameters_dict.items()}
        return self

    def get_global_job_parameters(self) -> dict[str, str]:
        return dict(self._global_job_parameters)

    def set_auto_watermark_interval(self, interval: int) -> ExecutionConfig:
        self._auto_watermark_interval_ms = int(interval)
        return self

    def get_auto_watermark_interval(self) -> int:
        return self._auto_watermark_interval_ms

    def enable_object_reuse(self) -> ExecutionConfig:
        self._object_reuse = True
        return self

    def disable_object_reuse(self) -> ExecutionConfig:
        self._object_reuse = False
        return self

    def is_object_reuse_enabled(self) -> bool:
        return self._object_reuse
