"""cobalt.common.prompts.shown_feedback: the execution feedback inside a feedback message."""

from __future__ import annotations

from cobalt.common.prompts import ALL_PUBLIC_PASSED_MARKER, feedback_message, shown_feedback

FEEDBACK = "Input:\n3 5\nProgram's Output:\n8\nExpected Output:\n10"


def test_inverse_of_our_feedback_message():
    message = feedback_message({"passing": [True, False], "feedback": ["Input:\n1 1\n...", FEEDBACK]})
    assert message != FEEDBACK
    assert shown_feedback(message) == FEEDBACK


def test_reference_layout_text_after_the_header():
    message = "Your code failed.\nHere is the execution feedback:\n" + FEEDBACK + "\n"
    assert shown_feedback(message) == FEEDBACK


def test_other_messages_are_returned_whole():
    message = feedback_message({"passing": [True], "feedback": ["Input:\n1\n"]})
    assert message.startswith(ALL_PUBLIC_PASSED_MARKER)
    assert shown_feedback(message) == message
