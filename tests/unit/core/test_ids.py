import pytest
from hypothesis import given
from hypothesis import strategies as st

from weir.core.errors import InvalidJobIdError
from weir.core.ids import new_job_id, parse_job_id

HEX = "0123456789abcdefABCDEF"


class TestParseJobId:
    @given(st.text(HEX, min_size=32, max_size=32))
    def test_32_hex_digits_are_a_job_id_in_lower_case(self, text):
        assert parse_job_id(text) == text.lower()

    def test_new_job_ids_parse(self):
        job_id = new_job_id()
        assert parse_job_id(job_id) == job_id

    @pytest.mark.parametrize(
        "text", ["../../x", "", "a" * 31, "a" * 33, "g" * 32, "a" * 31 + "/", " " + "a" * 32]
    )
    def test_anything_else_is_refused_naming_it_and_the_format(self, text):
        with pytest.raises(InvalidJobIdError, match=r"32 hex digits") as info:
            parse_job_id(text)
        assert repr(text) in str(info.value)
        assert isinstance(info.value, ValueError)

    @given(st.text().filter(lambda t: len(t) != 32 or any(c not in HEX for c in t)))
    def test_no_other_text_is_accepted(self, text):
        with pytest.raises(InvalidJobIdError):
            parse_job_id(text)

    def test_not_a_string_is_refused(self):
        with pytest.raises(InvalidJobIdError):
            parse_job_id(None)
