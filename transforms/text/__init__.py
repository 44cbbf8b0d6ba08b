"""Text analysis shared by every check that reads words: one package, one reading.

- `words`: the tokeniser (plain and structured-text word forms), the stemmer, the stopword list;
- `vocabulary`: the word classes that say what a word is about (the sources, the answer, the
  reader, the act of saying) rather than the world;
- `quantities`: numbers, money, percentages, vague amounts and stated ranges (with `dates`:
  dates, weekdays and times);
- `numerals`: numbers in words, other scripts, framed and Roman numeral characters as digits,
  and the numbers that cannot be read without a guess;
- `cjk_numbers`: Chinese, Japanese and Korean numerals, dates and amounts, as `quantities` reads;
- `names`: named entities and whether a text names them;
- `assertion`: the one classifier of whether a sentence asserts something checkable, shared by
  decomposition coverage and the offline decomposer.

Grounding, support, coverage, window pruning, injection detection and the offline judge read
words through these modules. Standard library only, but for `text2num` (numbers in words).
"""
