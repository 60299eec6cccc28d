#!/usr/bin/python3
"""idm.py: a small identity-management application on mcc (examples/README.md).

People and their enrolled fingers live in two tables; fingerprints arrive as
ISO/IEC 19794-2 or ANSI/INCITS 378 records (any edition mcc reads) or NBIS
xyt text. The application enrols, identifies (1:N), verifies (1:1) and
exports, and turns every error the database reports into a message naming
what went wrong, leaving the database as it was.

  idm.py [--dsn DSN] [--schema S] init
  idm.py ... enrol NAME POSITION FILE          (POSITION: ISO finger code 0..10)
  idm.py ... identify FILE [-k K]
  idm.py ... verify NAME POSITION FILE
  idm.py ... export NAME POSITION FORMAT OUT   (FORMAT: iso2005 iso2011 ansi2004 ansi2009 xyt)
  idm.py ... demo [RECORDS]                    the tour CI runs; TAP output

Common options: --fmr F (the false match rate decisions accept, default
0.0001: the threshold is mcc_threshold(F)),
--width/--height/--dpi (image of xyt input: xyt carries none).
The DSN defaults to libpq's environment (PGHOST, PGPORT, PGDATABASE, ...).
"""

import argparse
import csv
import os
import sys

import psycopg
from psycopg import sql

# Decisions use mcc's defaults: mcc_score(a, b) and identify()'s refined
# score are the 'fused' method, and the threshold is the one mcc ships for a
# chosen false match rate (mcc_threshold(fmr); docs/sql-reference.md,
# "Choosing the threshold"). Calibrate on your own data before trusting it.
DEFAULT_FMR = 0.0001
# the sensor of the sample records (mccgen's defaults): xyt needs it
SAMPLE_WIDTH, SAMPLE_HEIGHT = 388, 374

# SQLSTATEs of bad fingerprint input (docs/sql-reference.md, "Errors")
INPUT_ERRORS = {
    '22P02': 'malformed record',
    '22P03': 'truncated record or unsupported version',
    '22003': 'value out of range',
    '22023': 'invalid value',
    '54000': 'too many minutiae',
}


class AppError(Exception):
    """An error for the user: printed as it is, exit status 1."""


def explain(err):
    """One line for a database error: what kind, SQLSTATE, message, detail."""
    diag = err.diag
    kind = INPUT_ERRORS.get(err.sqlstate, 'database error')
    text = f'{kind} [{err.sqlstate}]: {diag.message_primary}'
    if diag.message_detail:
        text += f' ({diag.message_detail})'
    return text


class Probe:
    """A fingerprint file as the SQL expression that builds its template."""

    def __init__(self, path, width, height, dpi):
        try:
            with open(path, 'rb') as f:
                data = f.read()
        except OSError as e:
            raise AppError(f'cannot read {path}: {e.strerror}') from None
        self.path = path
        if data[:4] == b'FMR\0':
            # ISO or ANSI, any edition: mcc tells them apart by the header
            self.expr = sql.SQL('mcc_template_from_iso({})').format(sql.Literal(data))
        else:
            try:
                text = data.decode('ascii')
            except UnicodeDecodeError:
                raise AppError(f'{path} is neither an ISO/ANSI record nor xyt text') from None
            # xyt has no image size: NULL lets mcc derive it from the minutiae
            self.expr = sql.SQL('mcc_template_from_xyt({}, {}, {}, {})').format(
                sql.Literal(text), sql.Literal(width or None), sql.Literal(height or None),
                sql.Literal(dpi))


class Registry:
    """The application's tables in one schema, over one connection."""

    def __init__(self, conn, schema, fmr):
        self.conn = conn
        self.schema = schema
        self.fmr = fmr
        self._threshold = None
        # the schema first, then public (where mcc is installed)
        conn.execute(sql.SQL('SET search_path = {}, public').format(sql.Identifier(schema)))

    @property
    def threshold(self):
        """mcc's shipped threshold for the false match rate (once mcc exists)."""
        if self._threshold is None:
            self._threshold = self.conn.execute('SELECT mcc_threshold(%s)', (self.fmr,)).fetchone()[0]
        return self._threshold

    def init(self, fresh=False):
        with self.conn.transaction():
            if fresh:
                self.conn.execute(sql.SQL('DROP SCHEMA IF EXISTS {} CASCADE').format(
                    sql.Identifier(self.schema)))
            self.conn.execute('CREATE EXTENSION IF NOT EXISTS mcc SCHEMA public')
            self.conn.execute(sql.SQL('CREATE SCHEMA IF NOT EXISTS {}').format(
                sql.Identifier(self.schema)))
            self.conn.execute("""
                CREATE TABLE IF NOT EXISTS person (
                    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                    name text NOT NULL UNIQUE)""")
            # identify() needs an integer key and finds the template column
            self.conn.execute("""
                CREATE TABLE IF NOT EXISTS finger (
                    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                    person_id bigint NOT NULL REFERENCES person ON DELETE CASCADE,
                    position smallint NOT NULL CHECK (position BETWEEN 0 AND 10),
                    tpl mcc_template NOT NULL,
                    enrolled_at timestamptz NOT NULL DEFAULT now(),
                    UNIQUE (person_id, position))""")

    def enrol(self, name, position, probe):
        """Add a person's finger; one transaction, nothing kept on error."""
        try:
            with self.conn.transaction():
                self.conn.execute(
                    'INSERT INTO person (name) VALUES (%s) ON CONFLICT (name) DO NOTHING', (name,))
                cur = self.conn.execute(sql.SQL("""
                    INSERT INTO finger (person_id, position, tpl)
                    SELECT id, %s, {} FROM person WHERE name = %s
                    RETURNING id, mcc_minutiae_count(tpl)""").format(probe.expr), (position, name))
                return cur.fetchone()
        except psycopg.errors.UniqueViolation:
            raise AppError(f'{name} already has finger {position} enrolled') from None
        except psycopg.errors.CheckViolation:
            raise AppError(f'finger position {position} is not an ISO code 0..10') from None
        except psycopg.Error as e:
            raise AppError(f'cannot enrol {probe.path}: {explain(e)}') from None

    def identify(self, probe, k):
        """The k best candidates: (name, position, score, match), best first."""
        try:
            cur = self.conn.execute(sql.SQL("""
                SELECT p.name, f.position, i.score, i.score >= %s
                FROM identify('finger', {}, k => %s) AS i
                JOIN finger f ON f.id = i.id JOIN person p ON p.id = f.person_id
                ORDER BY i.score DESC, i.id""").format(probe.expr), (self.threshold, k))
            return cur.fetchall()
        except psycopg.Error as e:
            raise AppError(f'cannot identify {probe.path}: {explain(e)}') from None

    def verify(self, name, position, probe):
        """(score, match) of the probe against the claimed finger."""
        try:
            cur = self.conn.execute(sql.SQL("""
                SELECT mcc_score(f.tpl, {})
                FROM finger f JOIN person p ON p.id = f.person_id
                WHERE p.name = %s AND f.position = %s""").format(probe.expr),
                (name, position))
            row = cur.fetchone()
        except psycopg.Error as e:
            raise AppError(f'cannot verify {probe.path}: {explain(e)}') from None
        if row is None:
            raise AppError(f'{name} has no finger {position} enrolled')
        return row[0], row[0] >= self.threshold

    def export(self, name, position, fmt):
        """The stored finger as a record (bytes) or xyt (text)."""
        if fmt == 'xyt':
            expr = sql.SQL('convert_to(mcc_template_to_xyt(f.tpl), {})').format(sql.Literal('UTF8'))
        else:
            expr = sql.SQL('mcc_template_to_iso(f.tpl, {})').format(sql.Literal(fmt))
        try:
            cur = self.conn.execute(sql.SQL("""
                SELECT {} FROM finger f JOIN person p ON p.id = f.person_id
                WHERE p.name = %s AND f.position = %s""").format(expr), (name, position))
            row = cur.fetchone()
        except psycopg.Error as e:
            raise AppError(f'cannot export: {explain(e)}') from None
        if row is None:
            raise AppError(f'{name} has no finger {position} enrolled')
        return row[0]

    def count(self):
        return self.conn.execute('SELECT count(*) FROM finger').fetchone()[0]


class Tap:
    """TAP lines for the demo: scripts/run-tests.sh counts them."""

    def __init__(self):
        self.n = 0
        self.failed = 0

    def check(self, cond, name):
        self.n += 1
        if not cond:
            self.failed += 1
        print(f"{'' if cond else 'not '}ok {self.n} - {name}", flush=True)
        return cond

    def done(self):
        print(f'1..{self.n}')
        return 1 if self.failed else 0


def expect_error(tap, what, fn, needle):
    """A call that must fail with an AppError whose text holds needle."""
    try:
        fn()
    except AppError as e:
        return tap.check(needle in str(e), f'{what}: "{e}"')
    return tap.check(False, f'{what}: no error')


def demo(reg, records, args):
    """Enrol the sample people, identify and verify the probes, show the errors."""
    tap = Tap()
    reg.init(fresh=True)
    # the samples' sensor (mccgen's default), for the xyt ones
    probe = lambda path: Probe(os.path.join(records, path), SAMPLE_WIDTH, SAMPLE_HEIGHT, 500)

    with open(os.path.join(records, 'people.csv')) as f:
        people = list(csv.DictReader(f))
    for p in people:
        try:
            fid, n = reg.enrol(p['name'], int(p['position']), probe(p['record']))
            tap.check(n > 0, f"enrolled {p['name']} finger {p['position']} from {p['record']} ({n} minutiae)")
        except AppError as e:
            tap.check(False, f"enrolled {p['name']}: {e}")
    by_finger = {p['finger']: p for p in people}

    with open(os.path.join(records, 'probes', 'truth.csv')) as f:
        truth = list(csv.DictReader(f))
    for t in truth:
        path = f"probes/{t['probe_id']}.iso"
        hits = reg.identify(probe(path), 3)
        best = hits[0] if hits else None
        if t['mate_id']:
            want = by_finger[t['mate_id']]
            tap.check(best is not None and best[0] == want['name'] and best[1] == int(want['position'])
                      and best[3],
                      f"identify {path}: {want['name']} first, a match ({best[2] if best else 0:.3f})")
            score, match = reg.verify(want['name'], int(want['position']), probe(path))
            tap.check(match, f"verify {path} as {want['name']}: accepted ({score:.3f})")
            other = next(p for p in people if p['finger'] != t['mate_id'])
            score, match = reg.verify(other['name'], int(other['position']), probe(path))
            tap.check(not match, f"verify {path} as {other['name']}: rejected ({score:.3f})")
        else:
            tap.check(best is not None and not best[3],
                      f"identify {path} (never enrolled): no match ({best[2] if best else 0:.3f})")

    # export every format and enrol the exports again: the same person
    for fmt in ('iso2005', 'iso2011', 'ansi2004', 'ansi2009', 'xyt'):
        data = reg.export('alice', 2, fmt)
        out = os.path.join(args.tmp, f'alice.{fmt}')
        with open(out, 'wb') as f:
            f.write(data)
        name = f'alice-{fmt}'
        reg.enrol(name, 2, Probe(out, SAMPLE_WIDTH, SAMPLE_HEIGHT, 500))
        hits = reg.identify(probe('probes/4.iso'), 10)
        names = {h[0] for h in hits if h[3]}
        tap.check({'alice', name} <= names, f'alice exported as {fmt} ({len(data)} bytes), enrolled again: both match')

    # errors: each names the cause and leaves the tables as they were
    before = reg.count()
    with open(os.path.join(records, people[0]['record']), 'rb') as f:
        good = f.read()
    cut = os.path.join(args.tmp, 'truncated.iso')
    with open(cut, 'wb') as f:
        f.write(good[:40])
    expect_error(tap, 'a truncated record', lambda: reg.enrol('mallory', 1, probe(cut)),
                 'truncated record or unsupported version [22P03]')
    junk = os.path.join(args.tmp, 'junk.xyt')
    with open(junk, 'w') as f:
        f.write('this is not xyt\n')
    expect_error(tap, 'text that is not xyt', lambda: reg.enrol('mallory', 1, probe(junk)),
                 'malformed record [22P02]')
    outside = os.path.join(args.tmp, 'outside.xyt')
    with open(outside, 'w') as f:
        f.write('500 100 90 60\n')
    expect_error(tap, 'a minutia outside the image', lambda: reg.enrol('mallory', 1, probe(outside)),
                 'value out of range [22003]')
    expect_error(tap, 'enrolling a finger twice', lambda: reg.enrol('alice', 2, probe(people[0]['record'])),
                 'alice already has finger 2 enrolled')
    expect_error(tap, 'a finger position that is no ISO code',
                 lambda: reg.enrol('mallory', 11, probe(people[0]['record'])), 'not an ISO code')
    expect_error(tap, 'verifying someone never enrolled',
                 lambda: reg.verify('nobody', 1, probe('probes/1.iso')), 'nobody has no finger 1 enrolled')
    expect_error(tap, 'an unknown export format', lambda: reg.export('alice', 2, 'iso2099'),
                 'invalid value [22023]: unknown record format "iso2099"')
    tap.check(reg.count() == before and reg.conn.execute(
        "SELECT count(*) FROM person WHERE name = 'mallory'").fetchone()[0] == 0,
        f'after the errors the tables are as they were ({before} fingers, no mallory)')
    return tap.done()


# subcommands and their positional arguments
COMMANDS = {
    'init': (),
    'enrol': ('name', 'position', 'file'),
    'identify': ('file',),
    'verify': ('name', 'position', 'file'),
    'export': ('name', 'position', 'format', 'out'),
    'demo': (),
}


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--dsn', default='', help="libpq connection string (default: PG* environment)")
    ap.add_argument('--schema', default='idm', help='schema of the tables (default idm)')
    ap.add_argument('--fmr', type=float, default=DEFAULT_FMR,
                    help=f"false match rate decisions accept (default {DEFAULT_FMR}): threshold mcc_threshold(FMR)")
    ap.add_argument('--width', type=int, default=0, help='xyt input: image width (0: derive)')
    ap.add_argument('--height', type=int, default=0, help='xyt input: image height (0: derive)')
    ap.add_argument('--dpi', type=int, default=500, help='xyt input: resolution (default 500)')
    sub = ap.add_subparsers(dest='cmd', required=True)
    for cmd, positional in COMMANDS.items():
        p = sub.add_parser(cmd)
        for name in positional:
            p.add_argument(name, type=int if name == 'position' else str)
        if cmd == 'identify':
            p.add_argument('-k', type=int, default=5, help='candidates (default 5)')
        if cmd == 'demo':
            p.add_argument('records', nargs='?', help='sample records (default: records/ next to idm.py)',
                           default=os.path.join(os.path.dirname(os.path.abspath(__file__)), 'records'))
            p.add_argument('--tmp', default='/tmp', help='folder for the files the demo writes')
    args = ap.parse_args(argv)

    try:
        with psycopg.connect(args.dsn, autocommit=True) as conn:
            reg = Registry(conn, args.schema if args.cmd != 'demo' else args.schema + '_demo', args.fmr)
            if args.cmd == 'demo':
                return demo(reg, args.records, args)
            if args.cmd == 'init':
                reg.init()
                print(f'schema {args.schema} ready')
            elif args.cmd == 'enrol':
                fid, n = reg.enrol(args.name, args.position, Probe(args.file, args.width, args.height, args.dpi))
                print(f'enrolled {args.name} finger {args.position} as #{fid} ({n} minutiae)')
            elif args.cmd == 'identify':
                hits = reg.identify(Probe(args.file, args.width, args.height, args.dpi), args.k)
                for name, position, score, match in hits:
                    print(f"{name:20} finger {position:2}  {score:.4f}  {'MATCH' if match else ''}")
                if not any(h[3] for h in hits):
                    print('no match')
            elif args.cmd == 'verify':
                score, match = reg.verify(args.name, args.position,
                                          Probe(args.file, args.width, args.height, args.dpi))
                print(f"{'accepted' if match else 'rejected'} (score {score:.4f}, threshold {reg.threshold:.4f} "
                      f"for a false match rate of {args.fmr})")
                return 0 if match else 2
            elif args.cmd == 'export':
                data = reg.export(args.name, args.position, args.format)
                with open(args.out, 'wb') as f:
                    f.write(data)
                print(f'wrote {len(data)} bytes to {args.out}')
    except AppError as e:
        print(f'idm: {e}', file=sys.stderr)
        return 1
    except psycopg.OperationalError as e:
        print(f'idm: cannot connect: {e}', file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
