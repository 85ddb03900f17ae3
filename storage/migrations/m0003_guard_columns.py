"""Schema v3: the two compression guard fields that had no column of their own.

`failure_streak` (the cooldown ladder position after summarizer failures) was kept as a
` [failures=N]` suffix of `cooldown_error`, and `verify_pending` (a compaction awaits its
verdict from the next real prompt) as `last_prompt_tokens = -1`. Both get columns, and rows
written by v2 are converted: the suffix is parsed off the error text, and the -1 marker
becomes "no reading yet" (NULL) with `verify_pending = 1`.
"""

SQL = """
ALTER TABLE sessions ADD COLUMN failure_streak INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN verify_pending INTEGER NOT NULL DEFAULT 0;
UPDATE sessions SET verify_pending = 1, last_prompt_tokens = NULL
 WHERE last_prompt_tokens = -1;
UPDATE sessions
   SET failure_streak = CAST(substr(cooldown_error, instr(cooldown_error, '[failures=') + 10)
                             AS INTEGER),
       cooldown_error = NULLIF(rtrim(substr(cooldown_error, 1,
                                            instr(cooldown_error, '[failures=') - 1)), '')
 WHERE instr(cooldown_error, '[failures=') > 0;
"""

POSTGRES = """
ALTER TABLE sessions ADD COLUMN failure_streak INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN verify_pending INTEGER NOT NULL DEFAULT 0;
UPDATE sessions SET verify_pending = 1, last_prompt_tokens = NULL
 WHERE last_prompt_tokens = -1;
UPDATE sessions
   SET failure_streak = COALESCE(CAST(substring(cooldown_error FROM '\\[failures=([0-9]+)')
                                      AS INTEGER), 0),
       cooldown_error = NULLIF(rtrim(substr(cooldown_error, 1,
                                            strpos(cooldown_error, '[failures=') - 1)), '')
 WHERE strpos(cooldown_error, '[failures=') > 0;
"""
