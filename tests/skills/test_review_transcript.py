"""What a background review is shown: the reviewed turn (its opening message and as much of
its end as fits), then earlier history as room is left, within `max_chars`."""

from __future__ import annotations

from agent_core.skills.review import render_transcript, review_prompt, review_request


def _user(text: str) -> dict[str, object]:
    return {"role": "user", "content": text}


def _calls(n: int) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for i in range(n):
        out.append({"role": "assistant", "content": "", "tool_calls": [
            {"id": f"c{i}", "type": "function",
             "function": {"name": "read_file", "arguments": f'{{"path": "f{i}"}}'}}]})
        out.append({"role": "tool", "tool_call_id": f"c{i}", "tool_name": "read_file",
                    "content": f"result {i} " + "x" * 900})
    return out


def test_a_short_conversation_is_shown_whole() -> None:
    earlier = [_user("hello"), {"role": "assistant", "content": "Hi!"}]
    turn = [_user("read f0"), *_calls(1), {"role": "assistant", "content": "It says x."}]
    text = render_transcript(earlier, turn, 16_000)
    assert text.splitlines()[:3] == ["USER: hello", "ASSISTANT: Hi!", "--- the reviewed turn ---"]
    assert 'ASSISTANT called read_file({"path": "f0"})' in text
    assert "RESULT of read_file: result 0" in text and text.endswith("ASSISTANT: It says x.")


def test_a_long_turn_keeps_its_start_and_end_within_the_bound() -> None:
    earlier = [_user("an old question " * 50)]
    turn = [_user("the task"), *_calls(40), {"role": "assistant", "content": "All done."}]
    text = render_transcript(earlier, turn, 5_000)
    assert len(text) <= 5_200
    lines = text.splitlines()
    assert lines[0] == "[... 1 earlier message(s) left out ...]"
    assert lines[1] == "USER: the task"
    assert "message(s) of this turn left out" in lines[2]
    assert text.endswith("ASSISTANT: All done.")
    assert "result 39" in text and "result 0 " not in text  # tool results are cut too
    assert max(len(line) for line in lines) <= 2_100


def test_the_prompt_carries_the_index_and_memory_and_the_request_fences_the_transcript(
) -> None:
    prompt = review_prompt(skills_index="<available_skills>\n- a: b\n</available_skills>",
                           memory="# Memory\n- likes tea")
    assert prompt.startswith("# Background self-review")
    assert "- a: b" in prompt and "likes tea" in prompt
    assert "skills_list, skill_view, skill_manage and memory" in prompt
    request = review_request("USER: hi", trigger="iterations")
    assert "<transcript>\nUSER: hi\n</transcript>" in request
