from weir.jobmanager.checkpoint.shared_state_registry import SharedStateRegistry


class TestSharedStateRegistry:
    def test_a_file_is_released_when_the_last_checkpoint_referring_to_it_is(self):
        registry = SharedStateRegistry()
        registry.register(1, ["a", "b"])
        registry.register(2, ["b", "c"])
        assert registry.unregister(1) == ["a"]
        assert registry.unregister(2) == ["b", "c"]

    def test_registering_a_checkpoint_twice_counts_it_once(self):
        registry = SharedStateRegistry()
        registry.register(1, ["a"])
        registry.register(1, ["a"])
        assert registry.reference_count("a") == 1
        assert registry.unregister(1) == ["a"]

    def test_pinned_files_are_never_released(self):
        registry = SharedStateRegistry()
        registry.pin(["a"])
        registry.register(1, ["a", "b"])
        assert registry.unregister(1) == ["b"]
        assert registry.unreferenced(["a", "b"]) == ["b"]

    def test_files_of_an_aborted_checkpoint_that_nothing_refers_to_are_unreferenced(self):
        registry = SharedStateRegistry()
        registry.register(1, ["old"])
        assert registry.unreferenced(["old", "new"]) == ["new"]
