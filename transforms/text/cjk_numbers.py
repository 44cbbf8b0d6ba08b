"""Chinese, Japanese and Korean numbers, dates, times and vague amounts, said as `quantities`
reads them.

`rewrite` turns the CJK forms of a text into the forms the quantity reader already knows, so
that one reader compares values in every language:

- numerals: 三千 -> 3000, 两千五百 -> 2500, 一百二十 -> 120, 3万 -> 30000, 1.5亿 -> 150000000;
  not 一起, 一般, 统一; 十分 ("very") only as ten minutes before 钟; a lone 一 only before a
  unit of two characters ("一个月" one month, "一小时" one hour; not 一个, 一天, 一日: "a",
  "a day");
- dates and times: 2024年5月1日 -> 2024-05-01, 5月1日 -> May 1, 7点 / 7時 / 7시 -> 7:00,
  7点半 -> 7:30, 下午3点 / 午後3時 / 오후 3시 -> 3 pm;
- vague amounts and bounds: 数百 / 上百 / 수백 -> hundreds of, 几百 -> a few hundred, 数千 ->
  thousands of, 几千 -> a few thousand,
  三千多 / 3000余 / 超过3000 / 3000以上 / 3000 이상 -> over 3000, 不到 / 以下 / 未満 / 미만 ->
  under, 约 / 大约 / 約 / 약 / 左右 -> about, 近 / 将近 -> nearly; 百分之三十 -> 30%;
- units after a number: 元 / 块 (yuan), 円 (yen), 원 (won), 天 / 日 / 일 (days), 年 / 년, 个月 /
  か月 / 개월 (months), 小时 / 時間 / 시간 (hours), 分钟 / 分 / 분 (minutes), 公里 (km), 公斤
  (kg), 米 (meters), 人 / 名 / 명 (people), 次 / 回 / 번 (times).

Each rewrite is spaced apart from the characters around it, so a number glued to Han text
("有120间") is read. Standard library only.
"""

from __future__ import annotations

import re
import unicodedata
from decimal import Decimal

# The numeral characters read, and their values from the Unicode database
# (`unicodedata.numeric`): everyday digits, financial digits (壹贰叁...), 廿 / 卅 / 卌 (20,
# 30, 40), the scales; 两 / 兩 ("two" before a measure) has no numeric value there.
_DIGIT_CHARS = "零〇一二两兩三四五六七八九壹贰貳叁參叄肆伍陆陸柒捌玖"
_TENS_CHARS = "廿卅卌"
_SCALE_CHARS = "十拾百佰千仟万萬亿億"
_DIGITS = {ch: 2 if ch in "两兩" else int(unicodedata.numeric(ch)) for ch in _DIGIT_CHARS}
_SMALL_SCALES = {ch: int(unicodedata.numeric(ch)) for ch in "十拾百佰千仟"}
_BIG_SCALES = {"万": 10**4, "萬": 10**4, "亿": 10**8, "億": 10**8, "만": 10**4, "억": 10**8,
               "천": 1000, "백": 100}
_NUMERAL = _DIGIT_CHARS + _TENS_CHARS + _SCALE_CHARS
# Units and classifiers after which a bare numeral is a number ("三天", "五个人", "一次").
_UNIT_WORDS = {
    "个月": "months", "個月": "months", "か月": "months", "ヶ月": "months", "カ月": "months",
    "개월": "months", "小时": "hours", "小時": "hours", "時間": "hours", "시간": "hours",
    "分钟": "minutes", "分鐘": "minutes", "公里": "km", "公斤": "kg", "千克": "kg",
    "元": "yuan", "块": "yuan", "塊": "yuan", "円": "yen", "원": "won", "天": "days",
    "日": "days", "일": "days", "年": "years", "년": "years", "周": "weeks", "週": "weeks",
    "주": "weeks", "分": "minutes", "분": "minutes", "秒": "seconds", "초": "seconds",
    "米": "meters", "人": "people", "名": "people", "명": "people", "次": "times", "回": "times",
    "번": "times", "倍": "times", "%": "%", "％": "%",
}
_CLASSIFIERS = "个個间間家位种種层層条條张張本台件座辆輛只隻杯份道项項篇章部颗顆晚泊つ개층살권잔대"
_UNIT_ALT = "|".join(sorted(map(re.escape, _UNIT_WORDS), key=len, reverse=True))
_NUM = r"\d+(?:[.,]\d+)?"
# A numeral, with a decimal part after 点 and a scale after it ("三点五万" 35,000).
_CJK_NUM = f"[{_NUMERAL}]+(?:[点點][{_DIGIT_CHARS}]+[万萬亿億]?)?"
_HAN = "\u4e00-\u9fff\u3040-\u30ff\uac00-\ud7a3"

_PERCENT_RE = re.compile(r"百分之\s*(" + _NUM + "|" + _CJK_NUM + r")")
_DATE_RE = re.compile(r"(\d{4})\s*[年년]\s*(\d{1,2})\s*[月월]\s*(?:(\d{1,2})\s*[日号號일])?")
_MONTH_DAY_RE = re.compile(r"(?<!\d)(\d{1,2})\s*[月월]\s*(\d{1,2})\s*[日号號일]")
_YEAR_RE = re.compile(r"(?<!\d)(\d{4})\s*[年년](?![\d代]|\s*[月월])")
_HALF_DAY = {"上午": "am", "早上": "am", "凌晨": "am", "午前": "am", "오전": "am", "下午": "pm",
             "晚上": "pm", "午後": "pm", "夜": "pm", "오후": "pm", "저녁": "pm"}
_TIME_RE = re.compile(
    r"(?P<half>" + "|".join(_HALF_DAY) + r")?\s*(?P<h>\d{1,2})\s*[点點時시]"
    r"(?:\s*(?P<m>\d{1,2})\s*[分분]|(?P<halfhour>半|반))?")
_VAGUE = (
    (re.compile(r"(?:几|幾)\s*百"), " a few hundred "),
    (re.compile(r"(?:几|幾)\s*千"), " a few thousand "),
    (re.compile(r"(?:数|數|上|수)\s*(?:百|백)"), " hundreds of "),
    (re.compile(r"(?:数|數|上|수)\s*(?:千|천)"), " thousands of "),
    (re.compile(r"(?:数|數|几|幾|수)\s*(?:万|萬|만)"), " tens of thousands of "),
    (re.compile(r"(?:数|數|几|幾|수)\s*(?:十|십)"), " dozens of "),
)
_BEFORE = (
    (re.compile(r"(?:超过|超過|逾|多于|多於|高于|高於)\s*(?=\d)"), " over "),
    (re.compile(r"(?:不到|不足|少于|少於|低于|低於)\s*(?=\d)"), " under "),
    (re.compile(r"(?:将近|將近|接近|近|ほぼ)\s*(?=\d)"), " nearly "),
    (re.compile(r"(?:大约|大約|约|約|약|およそ)\s*(?=\d)"), " about "),
)
_AFTER = (
    (re.compile(r"(" + _NUM + r")\s*(?:多|余|餘|以上|이상|넘게)"), r" over \1 "),
    (re.compile(r"(" + _NUM + r")\s*(?:以下|未満|미만|이하)"), r" under \1 "),
    (re.compile(r"(" + _NUM + r")\s*(?:左右|前後|가량|정도)"), r" about \1 "),
)
_UNIT_RE = re.compile(r"(?<![\d.,])(" + _NUM + r")\s*(" + _UNIT_ALT + r")")
_RANGE_RE = re.compile(r"(?<=\d)\s*[至到~〜～]\s*(?=\d)|(?<=\d)\s*(?:부터|から)\s*(?=\d)")
_GLUE_RE = re.compile(r"(?<=[" + _HAN + r"])(?=\d)|(?<=\d)(?=[" + _HAN + r"])")


def _integer(numeral: str) -> int | None:
    if not numeral or any(ch not in _DIGITS and ch not in _SMALL_SCALES and ch not in _TENS_CHARS
                          and ch not in _BIG_SCALES for ch in numeral):
        return None
    if all(ch in _DIGITS for ch in numeral) and len(numeral) > 1:
        return int("".join(str(_DIGITS[ch]) for ch in numeral))  # 二〇二四: digit by digit
    total, section, digit, scale = 0, 0, None, 1
    for ch in numeral:
        if ch in _DIGITS:
            digit = _DIGITS[ch]
            scale = 1 if ch in "零〇" else scale
        elif ch in _TENS_CHARS or ch in _SMALL_SCALES:
            value = int(unicodedata.numeric(ch))
            section += value if ch in _TENS_CHARS else (1 if digit is None else digit) * value
            digit, scale = None, value
        else:
            total += (section + (digit or 0)) * _BIG_SCALES[ch] or _BIG_SCALES[ch]
            section, digit, scale = 0, None, _BIG_SCALES[ch]
    # 两千五 is 2,500 and 一万二 12,000: a last digit right after a scale of a hundred or more
    # counts in the next lower place (after 零 it is units: 一万零二 is 10,002).
    if digit is not None and scale >= 100 and numeral[-2] not in "零〇":
        digit *= scale // 10
    return total + section + (digit or 0)


def numeral_value(numeral: str) -> int | float | None:
    """The value of a Chinese or Japanese numeral ("三千五百" -> 3500, "两万" -> 20000,
    "二〇二四" -> 2024, "十五" -> 15, "两千五" -> 2500, "一万二" -> 12000, "三点五万" -> 35000,
    "叁佰" -> 300, "廿五" -> 25), or None if it is not one."""
    whole, point, rest = numeral.replace("點", "点").partition("点")
    if not point:
        return _integer(numeral)
    scale = _BIG_SCALES.get(rest[-1:], 1)
    fraction = rest[:-1] if scale > 1 else rest
    value = _integer(whole)
    if value is None or not fraction or any(ch not in _DIGITS for ch in fraction):
        return None
    # Decimal: 8.2 x 10^8 is 820,000,000 exactly, not 819,999,999.99.
    number = Decimal(f"{value}." + "".join(str(_DIGITS[ch]) for ch in fraction)) * scale
    return int(number) if number == number.to_integral_value() else float(number)


# What makes the numeral after it an ordinal or a name: 第一 (first), 星期一 / 周一 (Monday).
_NOT_AMOUNT = ("第", "星期", "礼拜", "禮拜", "周", "週", "0", "1", "2", "3", "4", "5", "6", "7",
               "8", "9")


def _percent(match: re.Match) -> str:
    raw = match.group(1)
    value = numeral_value(raw) if not raw[0].isdigit() else raw
    return match.group() if value is None else f" {value}% "


def _numerals(text: str) -> str:
    """Han numerals as digits: a numeral with a scale (十, 百, 千, 万, 亿), or of any digits
    before a unit or a classifier; a lone 一 only before a unit of two characters."""
    out, pos = [], 0
    for match in re.finditer(_CJK_NUM, text):
        numeral, after = match.group(), text[match.end():match.end() + 2]
        before = text[max(0, match.start() - 2):match.start()]
        if after[:1] == "分" and after not in ("分钟", "分鐘"):
            after = ""  # 十分: "very" (Chinese), "enough" (Japanese); minutes are 分钟
        unit = re.match(_UNIT_ALT, after)
        counted = bool(after) and (bool(unit) or after[0] in _CLASSIFIERS)
        if numeral == "一" and not (unit and len(unit.group()) > 1):
            continue  # 一个, 一天, 一日: "a", "a day"; 一个月, 一小时: one month, one hour
        scaled = any(ch in _SMALL_SCALES or ch in _BIG_SCALES or ch in _TENS_CHARS
                     for ch in numeral)
        if (before.endswith(_NOT_AMOUNT) or numeral[0] in _BIG_SCALES
                or not (counted or scaled and len(numeral) > 1)):
            continue  # 第一 (first), 星期一 (Monday), 万一 (in case): not amounts
        value = numeral_value(numeral)
        if value is None:
            continue
        out.append(text[pos:match.start()] + f" {value} ")
        pos = match.end()
    out.append(text[pos:])
    return "".join(out)


def _digit_scales(text: str) -> str:
    """"3万" -> 30000, "1.5亿" -> 150000000, "2천" -> 2000."""
    def value(match: re.Match) -> str:
        number = float(match.group(1).replace(",", ""))
        scaled = number * _BIG_SCALES[match.group(2)]
        return f" {int(scaled) if scaled.is_integer() else scaled} "
    return re.sub(r"(\d+(?:\.\d+)?)\s*([万萬亿億만억천백])", value, text)


def _time(match: re.Match) -> str:
    hour = int(match.group("h"))
    minute = 30 if match.group("halfhour") else int(match.group("m") or 0)
    half = _HALF_DAY.get(match.group("half") or "")
    if half and 1 <= hour <= 12 and minute < 60:
        return f" {hour}:{minute:02d} {half} "
    return f" {hour}:{minute:02d} " if hour <= 24 and minute < 60 else match.group()


def _date(match: re.Match) -> str:
    year, month, day = match.groups()
    if not 1 <= int(month) <= 12 or day and not 1 <= int(day) <= 31:
        return match.group()
    return f" {year}-{int(month):02d}-{int(day):02d} " if day else f" {year}-{int(month):02d}-01 "


_MONTHS = ("January February March April May June July August September October November "
           "December").split()


def _month_day(match: re.Match) -> str:
    month, day = int(match.group(1)), int(match.group(2))
    if not 1 <= month <= 12 or not 1 <= day <= 31:
        return match.group()
    return f" {_MONTHS[month - 1]} {day} "


def _unit(match: re.Match) -> str:
    return f" {match.group(1)} {_UNIT_WORDS[match.group(2)]} "


def rewrite(text: str) -> str:
    """`text` with its CJK numbers, dates, times and vague amounts in the forms `quantities`
    reads (see the module docstring); text without them is returned as it is."""
    for pattern, replacement in _VAGUE:
        text = pattern.sub(replacement, text)
    text = _PERCENT_RE.sub(_percent, text)
    text = _digit_scales(text)
    text = _numerals(text)
    text = _DATE_RE.sub(_date, text)
    text = _MONTH_DAY_RE.sub(_month_day, text)
    text = _YEAR_RE.sub(r" \1 ", text)
    text = _TIME_RE.sub(_time, text)
    for pattern, replacement in _BEFORE:
        text = pattern.sub(replacement, text)
    for pattern, replacement in _AFTER:
        text = pattern.sub(replacement, text)
    text = _UNIT_RE.sub(_unit, text)
    text = _RANGE_RE.sub(" to ", text)
    return _GLUE_RE.sub(" ", text)


# The English words `rewrite` puts into a text, left out of what the reader leaves unread.
INSERTED_WORDS_RE = re.compile(
    r"\b(?:a|few|hundred|thousand|hundreds|thousands|tens|dozens|of|over|under|nearly|about|am|pm|months|hours"
    r"|minutes|to|km|kg|yuan|yen|won|days|years|weeks|seconds|meters|people|times|January"
    r"|February|March|April|May|June|July|August|September|October|November|December)\b")
