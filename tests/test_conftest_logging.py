"""The test session's own set-up: transformers' log handler writes to the session's stream, not to the capture of
whichever test first imported transformers (which is closed when that test ends)."""

import sys


def test_transformers_log_handler_is_not_a_test_capture(capsys):
    from transformers.utils import logging as hf_logging

    hf_logging.get_logger()
    handler = hf_logging._default_handler
    assert handler is not None and handler.stream is not sys.stderr  # sys.stderr is this test's capture here
