#!/usr/bin/env python3
"""heft report: one self-contained HTML page (inline SVG plots, no network at view time) from the
output folders of heft identify, heft sample, heft estimate and heft filter runs on one robot.

    report.py [--bodies BODIES.json] OUT_HTML DIR [DIR...]

BODIES.json maps the robot's body names (links) to their joints' names, the names a log's truth
uses (heft report writes it). Reads DIR/result.json and, when present, DIR/torques.csv (heft identify), DIR/history.csv (heft
sample), DIR/trajectory.h5 (heft estimate); or DIR/summary.json with DIR/estimates.h5 and
DIR/baseline.h5 (heft filter). The log a run names is read for the measurements and, in a
simulated log, the truth the page compares with (scoring only). Exit 2 with one line on stderr
for a folder it cannot read. docs/guide/report.md lists what the page shows.
"""
import csv
import html
import io
import json
import math
import sys
from pathlib import Path

import matplotlib

matplotlib.use('Agg')
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

try:
    import h5py
except ImportError:  # the page then says what it could not draw
    h5py = None

plt.rcParams.update({'svg.fonttype': 'none', 'font.size': 9, 'axes.titlesize': 9,
                     'figure.dpi': 96, 'svg.hashsalt': 'heft'})
MAX_CHANNEL_PLOTS = 24
COLORS = {'measured': '#222222', 'nominal': '#999999', 'identified': '#d62728'}
BODY_JOINTS = {}  # body (link) name -> its joint's name, the name a log's truth uses
NEAR_BOUNDARY = 0.01  # relative_margin below this is flagged (docs/guide/report.md)


class ReportError(Exception):
    pass


def svg(fig):
    buffer = io.StringIO()
    # no metadata: no date (the same results give the same page) and no creator link
    fig.savefig(buffer, format='svg', bbox_inches='tight',
                metadata={'Creator': None, 'Date': None, 'Format': None, 'Type': None})
    plt.close(fig)
    text = buffer.getvalue()
    return text[text.index('<svg'):]


def esc(x):
    return html.escape(str(x))


def num(x, digits=4):
    if x is None:
        return ''
    if isinstance(x, (int, np.integer)):
        return str(x)
    if not math.isfinite(x):
        return str(x)
    return f'{x:.{digits}g}'


def table(header, rows, cls=''):
    # headers are this file's own text (they may hold entities); cells are escaped by the callers
    out = [f'<table class="{cls}"><tr>' + ''.join(f'<th>{h}</th>' for h in header) + '</tr>']
    for row in rows:
        out.append('<tr>' + ''.join(f'<td>{c}</td>' for c in row) + '</tr>')
    return '\n'.join(out) + '</table>'


class Run:
    def __init__(self, folder):
        self.folder = Path(folder)
        self.kind = 'filter' if (self.folder / 'summary.json').exists() and not (
            self.folder / 'result.json').exists() else None
        path = self.folder / ('summary.json' if self.kind else 'result.json')
        try:
            self.result = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            raise ReportError(f'{path}: cannot read it as JSON ({e})')
        robot = self.result.get('robot')
        self.robot = robot.get('name') if isinstance(robot, dict) else robot
        if not self.robot:
            raise ReportError(f'{path}: expected the result of heft identify, sample, estimate or '
                              'filter (a "robot" field), got none')
        if self.kind is None:
            self.kind = 'estimate' if 'estimation' in self.result else (
                'sample' if 'sampling' in self.result else 'identify')
        self.name = self.folder.name or str(self.folder)
        self.torques = self.read_torques()
        self.history = self.read_csv('history.csv')

    def read_csv(self, name):
        path = self.folder / name
        if not path.exists():
            return None
        with open(path) as f:
            return list(csv.DictReader(f))

    def read_torques(self):
        rows = self.read_csv('torques.csv')
        if rows is None:
            return None
        try:
            return {
                'recording': np.array([int(r['recording']) for r in rows]),
                'time': np.array([float(r['time']) for r in rows]),
                'channel': np.array([r['channel'] for r in rows]),
                'held_out': np.array([r['held_out'] == '1' for r in rows]),
                'measured': np.array([float(r['measured']) for r in rows]),
                'nominal': np.array([float(r['nominal']) for r in rows]),
                'identified': np.array([float(r['identified']) for r in rows]),
            }
        except (KeyError, ValueError) as e:
            raise ReportError(f'{self.folder / "torques.csv"}: unexpected content ({e})')


def body_rows(run):
    truth = (run.result.get('truth_errors') or {}).get('bodies', {})
    rows = []
    for body, p in (run.result.get('parameters') or {}).items():
        prior = p.get('prior_pi') or p.get('start_pi')
        std = p.get('std', {})
        prior_mass = prior[0] if prior else None
        prior_com = [prior[i] / prior[0] for i in (1, 2, 3)] if prior and prior[0] > 0 else None
        margin = p.get('relative_margin')
        flag = ''
        if p.get('consistent') is False:
            flag = '<span class="bad">not physically consistent</span>'
        elif margin is not None and margin < NEAR_BOUNDARY:
            flag = f'<span class="warn">near the consistency boundary (margin {num(margin, 2)})</span>'
        t = truth.get(body, {})
        rows.append([
            esc(body),
            f'{num(prior_mass, 6)} &rarr; <b>{num(p.get("mass"), 6)}</b> &plusmn; '
            f'{num(std.get("mass"), 2)}',
            num(t.get('mass_true'), 6),
            ', '.join(num(c, 3) for c in prior_com) + ' &rarr; <b>' +
            ', '.join(num(c, 3) for c in p.get('com', [])) + '</b>' if prior_com else
            ', '.join(num(c, 3) for c in p.get('com', [])),
            f'{1000 * t["com_error_m"]:.2f}' if 'com_error_m' in t else '',
            flag or 'inside'])
    return rows


def principal_box(pi):
    """Edges and axes of the solid box with pi's mass and rotational inertia about the COM."""
    m = pi[0]
    if m <= 0:
        return None
    c = np.array(pi[1:4]) / m
    I = np.array([[pi[4], pi[5], pi[7]], [pi[5], pi[6], pi[8]], [pi[7], pi[8], pi[9]]])
    I_com = I - m * (np.dot(c, c) * np.eye(3) - np.outer(c, c))
    moments, axes = np.linalg.eigh(I_com)
    total = moments.sum()
    edges = np.sqrt(np.maximum(6.0 * (total - 2.0 * moments) / m, 0.0))
    return c, axes, edges


def box_plot(run):
    bodies = [(b, p) for b, p in (run.result.get('parameters') or {}).items() if p.get('pi')]
    if not bodies:
        return ''
    columns = min(4, len(bodies))
    lines = math.ceil(len(bodies) / columns)
    fig = plt.figure(figsize=(3.0 * columns, 3.0 * lines))
    rows = []
    for k, (body, p) in enumerate(bodies):
        ax = fig.add_subplot(lines, columns, k + 1, projection='3d')
        prior = p.get('prior_pi') or p.get('start_pi')
        for label, pi, color in (('prior', prior, COLORS['nominal']),
                                 ('estimate', p['pi'], COLORS['identified'])):
            box = principal_box(pi) if pi else None
            if box is None:
                continue
            c, axes, edges = box
            rows.append([esc(body), label, ', '.join(f'{1000 * e:.1f}' for e in edges),
                         ', '.join(f'{1000 * x:.1f}' for x in c)])
            corners = np.array([[sx, sy, sz] for sx in (-.5, .5) for sy in (-.5, .5)
                                for sz in (-.5, .5)]) * edges
            world = corners @ axes.T + c
            for i in range(8):
                for j in range(i + 1, 8):
                    if bin(i ^ j).count('1') == 1:
                        ax.plot(*zip(world[i], world[j]), color=color, lw=1.2)
        ax.set_title(body)
        ax.set_xlabel('x [m]')
        ax.set_ylabel('y [m]')
        ax.set_zlabel('z [m]')
        ax.set_box_aspect((1, 1, 1))
    return svg(fig) + table(['body', 'model', 'box edges [mm]', 'COM [mm]'], rows)


def correlation_plot(run):
    cov = run.result.get('covariance') or {}
    names, matrix = cov.get('names'), cov.get('matrix')
    if not names or not matrix:
        return '<p>No covariance in result.json.</p>'
    if len(names) > 150:
        return f'<p>{len(names)} parameters: too many to draw.</p>'
    C = np.array(matrix, dtype=float)
    d = np.sqrt(np.maximum(np.diag(C), 1e-300))
    R = C / np.outer(d, d)
    size = min(11.0, 2.5 + 0.16 * len(names))
    font = 7 if len(names) <= 40 else 4
    fig, ax = plt.subplots(figsize=(size, size * 0.85))
    im = ax.imshow(R, vmin=-1, vmax=1, cmap='RdBu_r')
    ax.set_xticks(range(len(names)), names, rotation=90, fontsize=font)
    ax.set_yticks(range(len(names)), names, fontsize=font)
    fig.colorbar(im, ax=ax, shrink=0.8, label='correlation')
    return svg(fig)


def residual_rms_plot(run):
    res = run.result.get('residuals') or {}
    channels = res.get('channels')
    if not channels:
        return ''
    x = np.arange(len(channels))
    fig, ax = plt.subplots(figsize=(max(5, 0.3 * len(channels) + 2), 2.8))
    ax.bar(x - 0.2, res['rms_before'], 0.4, color=COLORS['nominal'], label='nominal (priors)')
    ax.bar(x + 0.2, res['rms_after'], 0.4, color=COLORS['identified'], label='identified')
    ax.set_xticks(x, channels, rotation=60, ha='right', fontsize=7)
    ax.set_ylabel('residual RMS [N m]')
    ax.legend()
    return svg(fig)


def channel_order(run):
    # result.json's order (the model's joints, or projected rows by index); torques.csv is by row
    listed = (run.result.get('residuals') or {}).get('channels') or []
    present = set(run.torques['channel'])
    return [c for c in listed if c in present] + sorted(present - set(listed))


def heldout_spans(time, held_out):
    """The time spans of consecutive held-out rows (every channel together)."""
    order = np.argsort(time, kind='stable')
    spans, begin, last = [], None, None
    for t, h in zip(time[order], held_out[order]):
        if h and begin is None:
            begin = t
        if not h and begin is not None:
            spans.append((begin, last))
            begin = None
        last = t
    if begin is not None:
        spans.append((begin, last))
    return spans


def torque_plots(run):
    t = run.torques
    if t is None or len(t['time']) == 0:
        return '<p>No torques.csv in this folder (heft identify writes it).</p>'
    channels = channel_order(run)
    shown = channels[:MAX_CHANNEL_PLOTS]
    note = (f'<p>First {len(shown)} of {len(channels)} channels.</p>'
            if len(shown) < len(channels) else '')
    first = t['recording'] == t['recording'].min()
    spans = heldout_spans(t['time'][first], t['held_out'][first])
    columns = 3
    rows = math.ceil(len(shown) / columns)
    fig, axes = plt.subplots(rows, columns, figsize=(11, 2.1 * rows), squeeze=False)
    for k, name in enumerate(shown):
        ax = axes[k // columns][k % columns]
        sel = first & (t['channel'] == name)
        order = np.argsort(t['time'][sel])
        time = t['time'][sel][order]
        for key in ('measured', 'nominal', 'identified'):
            ax.plot(time, t[key][sel][order], '.', ms=1.5, color=COLORS[key], label=key)
        for i, (begin, end) in enumerate(spans):
            ax.axvspan(begin, end, color='#1f77b4', alpha=0.12, label='held out' if i == 0 else None)
        ax.set_title(name)
        if k % columns == 0:
            ax.set_ylabel('[N m]')
    for k in range(len(shown), rows * columns):
        axes[k // columns][k % columns].axis('off')
    axes[0][0].legend(loc='best', fontsize=7, markerscale=4)
    fig.supxlabel('time [s]')
    fig.tight_layout()
    return note + svg(fig)


def histogram_plot(run):
    t = run.torques
    if t is None or len(t['time']) == 0:
        return ''
    fit = ~t['held_out']
    fig, ax = plt.subplots(figsize=(5.5, 2.8))
    nominal = (t['measured'] - t['nominal'])[fit]
    identified = (t['measured'] - t['identified'])[fit]
    edges = np.histogram_bin_edges(np.concatenate([nominal, identified]), bins=60)
    ax.hist(nominal, edges, color=COLORS['nominal'], alpha=0.7, label='nominal (priors)')
    ax.hist(identified, edges, color=COLORS['identified'], alpha=0.7, label='identified')
    ax.set_xlabel('measured - predicted torque [N m], fitted rows, every channel')
    ax.set_ylabel('rows')
    ax.legend()
    return svg(fig)


def heldout_table(run):
    t = run.torques
    if t is None or not t['held_out'].any():
        return '<p>No held-out range (identify\'s <code>validation:</code> adds one).</p>'

    def rms(e):
        return math.sqrt(float(np.mean(e ** 2)))

    def row(label, sel):
        return [label, num(rms(t['measured'][sel] - t['nominal'][sel])),
                num(rms(t['measured'][sel] - t['identified'][sel])), num(rms(t['measured'][sel]))]

    rows = []
    for name in channel_order(run):
        sel = t['held_out'] & (t['channel'] == name)
        if sel.any():
            rows.append(row(esc(name), sel))
    rows.append(row('<b>all</b>', t['held_out']))
    return table(['channel', 'nominal RMSE [N m]', 'identified RMSE [N m]', 'measured RMS [N m]'],
                 rows)


def convergence_plot(run):
    if not run.history:
        s = run.result.get('summary') or {}
        return (f'<p>{esc(s.get("status", ""))}: {esc(s.get("message", ""))}, '
                f'{esc(s.get("iterations", ""))} iterations.</p>')
    g = [int(r['generation']) for r in run.history]
    cost = [float(r['best_cost']) for r in run.history]
    fig, ax = plt.subplots(figsize=(5.5, 2.6))
    ax.semilogy(g, cost, color=COLORS['identified'])
    ax.set_xlabel('CMA-ES generation')
    ax.set_ylabel('best cost')
    return svg(fig)


def summary_table(run):
    r = run.result
    s = r.get('summary') or {}
    ident = r.get('identifiability') or {}
    urdf = r.get('urdf') or {}
    rows = [['method', esc(r.get('method', ''))],
            ['status', esc(s.get('status', ''))],
            ['message', esc(s.get('message', ''))],
            ['samples / rows', f'{esc(s.get("samples", ""))} / {esc(s.get("rows", ""))}'],
            ['time', f'{num(s.get("time_s"), 3)} s'],
            ['URDF', esc(urdf.get('status', ''))]]
    if ident:
        rows.append(['rank / dimension, condition number',
                     f'{ident.get("rank")} / {ident.get("dimension")}, '
                     f'{num(ident.get("condition_number"), 3)}'])
    return table(['', ''], rows, 'kv')


def actuator_tables(run):
    out = []
    friction = run.result.get('friction')
    if isinstance(friction, list) and friction:
        rows = [[esc(f.get('joint')),
                 f'{num(f.get("coulomb_prior"))} &rarr; {num(f.get("coulomb"))} &plusmn; '
                 f'{num(f.get("coulomb_std"), 2)}',
                 f'{num(f.get("viscous_prior"))} &rarr; {num(f.get("viscous"))} &plusmn; '
                 f'{num(f.get("viscous_std"), 2)}'] for f in friction]
        out.append(table(['joint', 'Coulomb [N m]', 'viscous [N m s/rad]'], rows))
    elif isinstance(friction, dict) and friction:
        rows = [[esc(j), num(f.get('coulomb')), num(f.get('viscous'))] for j, f in friction.items()]
        out.append(table(['joint', 'Coulomb [N m]', 'viscous [N m s/rad]'], rows))
    return '\n'.join(out)


def h5(path):
    if h5py is None:
        return None
    try:
        return h5py.File(path, 'r')
    except OSError:
        return None


def strings(dataset):
    return [x.decode() if isinstance(x, bytes) else str(x) for x in dataset[()]]


def log_of(run, name):
    """The log a run names (relative paths: from where heft ran, or from the folder's parent)."""
    for candidate in (Path(name), run.folder.parent / name, run.folder.parent.parent / name):
        if candidate.exists():
            return h5(candidate)
    return None


def trajectory_plots(run):
    windows = (run.result.get('estimation') or {}).get('windows') or []
    window = windows[0] if windows else (run.result.get('estimation') or {}).get('window', {})
    written = (window.get('trajectory') or {}).get('path') or 'trajectory.h5'
    estimate = h5(run.folder / Path(written).name)
    if estimate is None:
        return '<p>No trajectory.h5 (or h5py missing).</p>'
    log = log_of(run, window.get('log', ''))
    parts = []
    names = strings(estimate['joints/names'])
    shown = names[:12]
    columns = 3
    rows = math.ceil(len(shown) / columns)
    fig, axes = plt.subplots(rows, columns, figsize=(11, 2.0 * rows), squeeze=False)
    t_est = estimate['joints/time'][()]
    q_est = estimate['joints/q'][()]
    if log is not None and 'joints' in log:
        log_names = strings(log['joints/names'])
        t_log = log['joints/time'][()]
        sel = (t_log >= t_est[0]) & (t_log <= t_est[-1])
    for k, name in enumerate(shown):
        ax = axes[k // columns][k % columns]
        if log is not None and name in log_names:
            ax.plot(t_log[sel], log['joints/q'][()][sel, log_names.index(name)], '.', ms=1.5,
                    color=COLORS['measured'], label='measured')
        ax.plot(t_est, q_est[:, k], color=COLORS['identified'], lw=1, label='estimated')
        ax.set_title(name)
        if k % columns == 0:
            ax.set_ylabel('q [rad]')
    for k in range(len(shown), rows * columns):
        axes[k // columns][k % columns].axis('off')
    axes[0][0].legend(fontsize=7, markerscale=4)
    fig.supxlabel('time [s]')
    fig.tight_layout()
    parts.append('<h4>Joint positions: estimated and measured</h4>' + svg(fig))
    if 'force_torque' in estimate:
        parts.append(contact_force_plot(estimate, log))
    return '\n'.join(parts)


def contact_force_plot(estimate, log):
    names = strings(estimate['force_torque/names'])
    t = estimate['force_torque/time'][()]
    wrench = estimate['force_torque/wrench'][()]
    truth = None
    if log is not None and 'truth/contact_forces' in log and 'truth/contact_names' in log:
        truth = (strings(log['truth/contact_names']), log['truth/time'][()],
                 log['truth/contact_forces'][()])
    columns = 2
    rows = math.ceil(len(names) / columns)
    fig, axes = plt.subplots(rows, columns, figsize=(11, 2.0 * rows), squeeze=False)
    for k, name in enumerate(names):
        ax = axes[k // columns][k % columns]
        if truth is not None and name in truth[0]:
            i = truth[0].index(name)
            sel = (truth[1] >= t[0]) & (truth[1] <= t[-1])
            ax.plot(truth[1][sel], np.linalg.norm(truth[2][sel, 3 * i:3 * i + 3], axis=1),
                    color=COLORS['measured'], lw=1, label='truth (simulator)')
        ax.plot(t, np.linalg.norm(wrench[:, 6 * k:6 * k + 3], axis=1), color=COLORS['identified'],
                lw=1, label='reconstructed')
        ax.set_title(name)
        if k % columns == 0:
            ax.set_ylabel('|f| [N]')
    for k in range(len(names), rows * columns):
        axes[k // columns][k % columns].axis('off')
    axes[0][0].legend(fontsize=7)
    fig.supxlabel('time [s]')
    fig.tight_layout()
    errors = ''
    return ('<h4>Contact forces: reconstructed and, in a simulated log, the simulator\'s '
            '(force magnitude, frame-independent)</h4>' + errors + svg(fig))


def estimate_errors(run):
    est = run.result.get('estimation') or {}
    windows = est.get('windows') or [est.get('window') or {}]
    rows = []
    for key, label in (('trajectory_errors', 'trajectory'), ('contact_force_errors',
                                                              'contact forces')):
        for name, value in (windows[0].get(key) or est.get(key) or {}).items():
            if isinstance(value, (int, float)):
                rows.append([label, esc(name), num(value)])
    return table(['what', 'error', 'value'], rows) if rows else ''


def filter_plots(run):
    parts = []
    log = log_of(run, run.result.get('log', ''))
    truth = {}
    if log is not None and 'truth' in log:
        tr = log['truth']
        if 'varying_body_names' in tr:
            for b, name in enumerate(strings(tr['varying_body_names'])):
                truth[name] = (tr['time'][()], tr['varying_body_pi'][()][:, 10 * b])
        if 'bodies/names' in tr:
            for b, name in enumerate(strings(tr['bodies/names'])):
                truth.setdefault(name, (None, tr['bodies/pi'][()][b, 0]))
    files = [(f, label, color) for f, label, color in (
        ('estimates.h5', 'log-Cholesky EKF', COLORS['identified']),
        ('baseline.h5', 'linear KF baseline', COLORS['nominal'])) if (run.folder / f).exists()]
    opened = [(h5(run.folder / f), label, color) for f, label, color in files]
    opened = [(f, label, color) for f, label, color in opened if f is not None]
    if not opened:
        return '<p>No estimates.h5 (or h5py missing).</p>'
    bodies = strings(opened[0][0]['estimates/body_names'])
    fig, axes = plt.subplots(len(bodies), 1, figsize=(10, 2.6 * len(bodies)), squeeze=False)
    for b, body in enumerate(bodies):
        ax = axes[b][0]
        for f, label, color in opened:
            t = f['estimates/time'][()]
            m = f['estimates/body_pi'][()][:, 10 * b]
            ax.plot(t, m, color=color, lw=1, label=label)
            if 'estimates/body_pi_std' in f:
                sd = f['estimates/body_pi_std'][()][:, 10 * b]
                ax.fill_between(t, m - 2 * sd, m + 2 * sd, color=color, alpha=0.15, lw=0)
        key = body if body in truth else BODY_JOINTS.get(body)
        if key in truth:
            tt, tm = truth[key]
            if tt is None:
                ax.axhline(tm, color=COLORS['measured'], lw=1, ls='--', label='truth')
            else:
                ax.plot(tt, tm, color=COLORS['measured'], lw=1, ls='--', label='truth')
        ax.set_title(f'{body}: mass with its 2-sigma band')
        ax.set_ylabel('[kg]')
        ax.legend(fontsize=7)
    axes[-1][0].set_xlabel('time [s]')
    fig.tight_layout()
    parts.append(svg(fig))
    rows = []
    for r in run.result.get('runs') or []:
        for b in r.get('bodies') or []:
            rows.append([esc(r.get('estimator')), esc(b.get('name')), num(b.get('final_mass'), 6),
                         num(b.get('final_truth_mass'), 6), num(b.get('mass_rms_relative'), 3),
                         num(1000 * b['final_com_error_m'], 3) if 'final_com_error_m' in b else ''])
    if rows:
        parts.append(table(['estimator', 'body', 'final mass [kg]', 'true mass [kg]',
                            'mass RMS (relative)', 'final COM error [mm]'], rows))
    return '\n'.join(parts)


def filter_section(index, run):
    warnings = run.result.get('warnings') or []
    parts = [f'<section id="run{index}"><h2>{esc(run.name)} (heft filter)</h2>',
             f'<p class="path">{esc(run.folder.resolve())}</p>',
             table(['', ''], [['log', esc(run.result.get('log', ''))],
                              ['bodies', esc(', '.join(run.result.get('bodies') or []))],
                              ['gate threshold', num(run.result.get('gate_threshold'))]], 'kv')]
    if warnings:
        parts.append('<details open><summary>Warnings ({})</summary><ul class="warnings">'.format(
            len(warnings)) + ''.join(f'<li>{esc(w)}</li>' for w in warnings) + '</ul></details>')
    parts += ['<h3>Estimates over time</h3>', filter_plots(run), '</section>']
    return '\n'.join(parts)


def run_section(index, run):
    if run.kind == 'filter':
        return filter_section(index, run)
    warnings = run.result.get('warnings') or []
    parts = [f'<section id="run{index}"><h2>{esc(run.name)} (heft {run.kind})</h2>',
             f'<p class="path">{esc(run.folder.resolve())}</p>',
             summary_table(run)]
    if warnings:
        parts.append('<details open><summary>Warnings ({})</summary><ul class="warnings">'.format(
            len(warnings)) + ''.join(f'<li>{esc(w)}</li>' for w in warnings) + '</ul></details>')
    parts += ['<h3>Parameters</h3>',
              table(['body', 'mass prior &rarr; estimate &plusmn; std [kg]', 'true mass [kg]',
                     'COM prior &rarr; estimate [m]', 'COM error [mm]', 'consistency'],
                    body_rows(run)),
              actuator_tables(run),
              '<h3>Equivalent inertia boxes (prior grey, estimate red)</h3>', box_plot(run),
              '<h3>Correlation of the identified parameters</h3>', correlation_plot(run),
              ]
    if run.kind == 'estimate':
        parts += ['<h3>Trajectory and contact forces</h3>', estimate_errors(run),
                  trajectory_plots(run)]
    else:
        parts += ['<h3>Measured and predicted torque</h3>', torque_plots(run),
                  '<h3>Held-out prediction</h3>', heldout_table(run),
                  '<h3>Residuals</h3>', residual_rms_plot(run), histogram_plot(run)]
    parts += ['<h3>Solver</h3>', convergence_plot(run), '</section>']
    return '\n'.join(parts)


def comparison(runs):
    rows = []
    for i, run in enumerate(runs):
        if run.kind == 'filter':
            for r in run.result.get('runs') or []:
                for b in r.get('bodies') or []:
                    rows.append([f'<a href="#run{i}">{esc(run.name)}</a>',
                                 esc(r.get('estimator', '')), 'final', esc(b.get('name')),
                                 num(b.get('final_mass'), 6), ''])
            continue
        s = run.result.get('summary') or {}
        for body, p in (run.result.get('parameters') or {}).items():
            rows.append([f'<a href="#run{i}">{esc(run.name)}</a>', esc(run.result.get('method', '')),
                         esc(s.get('status', '')), esc(body),
                         f'{num(p.get("mass"), 6)} &plusmn; '
                         f'{num((p.get("std") or {}).get("mass"), 2)}',
                         ', '.join(num(c, 3) for c in p.get('com', []))])
    return table(['run', 'method', 'status', 'body', 'mass [kg]', 'COM [m]'], rows)


STYLE = """
body { font-family: sans-serif; margin: 1.5em; color: #222; max-width: 1200px; }
table { border-collapse: collapse; margin: 0.5em 0 1em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f2f2f2; }
table.kv td:first-child { font-weight: bold; }
.bad { color: #b00; font-weight: bold; } .warn { color: #b60; font-weight: bold; }
ul.warnings li { color: #b60; margin-bottom: 0.3em; }
.path { color: #777; font-size: 0.85em; }
section { border-top: 2px solid #ddd; margin-top: 2em; }
svg { max-width: 100%; height: auto; }
"""

# Marks the page as rendered when it loaded without a script error (the headless-browser test
# reads it back from the DOM).
SCRIPT = """
window.heftErrors = [];
window.addEventListener('error', function (e) { window.heftErrors.push(String(e.message)); });
document.addEventListener('DOMContentLoaded', function () {
  document.body.setAttribute('data-svgs', String(document.querySelectorAll('svg').length));
  document.body.setAttribute('data-rendered', window.heftErrors.length ? 'errors' : 'ok');
});
"""


def main(argv):
    global BODY_JOINTS
    args = argv[1:]
    if args[:1] == ['--bodies']:
        BODY_JOINTS = json.loads(Path(args[1]).read_text())
        args = args[2:]
    if len(args) < 2:
        print('usage: report.py [--bodies BODIES.json] OUT_HTML DIR [DIR...]', file=sys.stderr)
        return 2
    out = Path(args[0])
    try:
        runs = [Run(d) for d in args[1:]]
        robots = {r.robot for r in runs}
        if len(robots) > 1:
            raise ReportError('results of different robots: ' + ', '.join(
                f'{r.folder} ({r.robot})' for r in runs))
    except ReportError as e:
        print(e, file=sys.stderr)
        return 2
    robot = runs[0].robot
    body = [f'<h1>heft report: {esc(robot)}, {len(runs)} run{"s" if len(runs) > 1 else ""}</h1>',
            comparison(runs)]
    body += [run_section(i, run) for i, run in enumerate(runs)]
    page = ('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<title>heft report: {esc(robot)}</title><style>{STYLE}</style>'
            f'<script>{SCRIPT}</script></head>\n<body>\n' + '\n'.join(body) + '\n</body></html>\n')
    out.write_text(page)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
