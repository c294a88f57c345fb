# datetime's pure parts: construction, arithmetic, printing, parsing.
import datetime
from datetime import datetime as DT, timedelta, date, timezone, time

d = DT(2024, 2, 28, 23, 30, 15, 250)
print(d, repr(d), d.isoformat(), d.isoformat(sep=" ", timespec="milliseconds"))
print(d + timedelta(hours=1), d + timedelta(days=1, minutes=45), d - timedelta(weeks=9))
print(repr(DT(2024, 1, 1)), repr(DT(2024, 1, 1, 5)), repr(DT(2024, 1, 1, 0, 0, 7)))
e = DT(2023, 12, 31, 8)
print(d - e, repr(d - e), (d - e).total_seconds(), (e - d), repr(e - d))
print(d > e, d == DT(2024, 2, 28, 23, 30, 15, 250), sorted([d, e])[0], max(d, e).year)
print(d.strftime("%Y-%m-%d %H:%M:%S.%f %a %A %b %B %j %p %I %y %U %W %w %%"), d.strftime("%c|%x|%X"))
print(f"{d:%d/%m/%Y}", "{:%H.%M}".format(d), format(d, ""))
print(d.date(), d.time(), repr(d.time()), d.weekday(), d.isoweekday(), d.timetz())
print(d.replace(year=2025, day=1), d.toordinal(), DT.fromordinal(738000), date.fromordinal(1))
print(DT.fromisoformat("2024-03-05T10:20:30.123"), DT.fromisoformat("2024-03-05"), DT.fromisoformat("2024-03-05 10:20"))
print(DT.strptime("2024-03-05 10:20:30", "%Y-%m-%d %H:%M:%S"), DT.strptime("05 Mar 2024 1PM", "%d %b %Y %I%p"))
print(DT.combine(date(2020, 5, 17), time(7, 8, 9)))
print(DT.fromtimestamp(86400 * 365.25 + 0.5, timezone.utc), DT.fromtimestamp(0, tz=timezone.utc).timestamp())
utc = DT(2024, 6, 1, 12, tzinfo=timezone.utc)
plus2 = timezone(timedelta(hours=2), "CEST")
print(utc, repr(utc), utc.astimezone(plus2), utc.astimezone(plus2) == utc, utc.strftime("%z %Z"))
print(repr(timezone(timedelta(hours=-5, minutes=-30))), timezone(timedelta(hours=-5, minutes=-30)), datetime.UTC)
print(utc.timestamp(), DT(2024, 6, 1, 14, tzinfo=plus2) - utc)

t = timedelta(days=1, hours=2, minutes=3, seconds=4, microseconds=5)
print(t, repr(t), t.days, t.seconds, t.microseconds, t.total_seconds())
print(-t, repr(-t), abs(-t), t * 2, 2 * t, t / 2, t // 3, t / timedelta(hours=1), t // timedelta(hours=1))
print(t % timedelta(hours=1), divmod(t, timedelta(hours=5)), t * 0.5, timedelta(hours=1.5), timedelta(0), repr(timedelta(0)))
print(timedelta(milliseconds=1500), timedelta(seconds=-1), repr(timedelta(seconds=-1)), timedelta(days=-2, hours=3))
print(bool(timedelta(0)), bool(t), t == timedelta(seconds=t.total_seconds()), timedelta(minutes=1) < timedelta(seconds=61))
print(timedelta.max, timedelta.min, timedelta.resolution, hash(timedelta(1)) == hash(timedelta(hours=24)))
print(sum([timedelta(minutes=20), timedelta(minutes=50)], timedelta()))

a = date(2024, 2, 29)
print(a, repr(a), a + timedelta(days=1), a - date(2023, 1, 1), a.isocalendar(), a.isocalendar().week, a.ctime())
print(a.replace(day=1), date.fromisoformat("2021-12-31"), date(2021, 1, 3).isocalendar(), date.fromisocalendar(2020, 53, 5))
print(a.strftime("%A %d %B %Y"), date.min, date.max, DT.min, DT.max, a.year, a.month, a.day)
print(isinstance(d, date), isinstance(a, DT), type(d).__name__, type(d).__module__, DT, a == date(2024, 2, 29))
print(time(1, 2), repr(time(1, 2, 3, 4)), time(23, 59, 59).isoformat("minutes"), time.fromisoformat("12:34:56.7"))
n = DT.now()
print(type(n).__name__, n.year >= 2024, type(date.today()).__name__, abs(DT.now() - n) < timedelta(seconds=5))
for bad in [lambda: date(2023, 2, 29), lambda: DT(2024, 13, 1), lambda: time(24), lambda: DT.fromisoformat("2024/01/01"),
            lambda: DT.strptime("2024", "%Y-%m"), lambda: d < a, lambda: d - utc, lambda: timedelta(days=10**9)]:
    try:
        bad()
    except (ValueError, TypeError, OverflowError) as exc:
        print(type(exc).__name__, exc)
