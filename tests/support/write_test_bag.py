#!/usr/bin/env python3
"""Writes the ROS 2 bag the import tests read, with rosbags (the library heft's reader uses), from
a heft CSV log, and beside it the same data as a heft CSV log, assembled here in numpy
independently of heft's importer.

    write_test_bag.py SOURCE_CSV_LOG BAG REFERENCE_CSV_LOG {mcap|sqlite3} THRESHOLD

The source log runs at 2 kHz (joints, IMU, force/torque) and holds a base pose and twist (a state
estimator's). The bag carries /joint_states at 500 Hz, /joint_commands (efforts only: the
commanded torques) on the same stamps, /imu at 400 Hz, one WrenchStamped topic per
force/torque sensor at 1 kHz (/ft/<sensor>), /odom (nav_msgs/Odometry, the base pose and twist) at
100 Hz, and /mocap (PoseStamped, the base's markers) at the source's mocap times, the same poses
as world -> base transforms on /tf; header stamps are the source times
plus an epoch, receive times 0.3 ms later. The reference log is what docs/guide/import.md says
heft import makes of it: times from the earliest stamp, the odometry interpolated at the joint
times (linear, quaternions by slerp) with the joint samples outside it dropped, contact flags where
a sensor's force norm exceeds THRESHOLD.
"""
import sys
from pathlib import Path

import numpy as np
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.typesys import Stores, get_typestore

EPOCH_NS = 1_764_000_000_123_456_789
LATENCY_NS = 300_000


def read_csv(path):
    with open(path) as f:
        header = f.readline().strip().split(',')
    data = np.loadtxt(path, delimiter=',', skiprows=1, ndmin=2)
    return header, data


def columns(header, data, prefix):
    idx = [i for i, h in enumerate(header) if h.startswith(prefix)]
    return [header[i][len(prefix):] for i in idx], data[:, idx]


def read_metadata(path):
    meta = {}
    for line in open(path):
        if ':' in line and not line.startswith(' ') and not line.startswith('-'):
            key, value = line.split(':', 1)
            meta[key.strip()] = value.strip().strip('"')
    return meta


def stamps(time):
    return EPOCH_NS + np.round(time * 1e9).astype(np.int64)


def slerp(a, b, s):
    # Eigen's Quaternion::slerp, coefficient for coefficient.
    d = float(np.dot(a, b))
    abs_d = abs(d)
    if abs_d >= 1.0 - np.finfo(float).eps:
        scale0, scale1 = 1.0 - s, s
    else:
        theta = np.arccos(abs_d)
        sin_theta = np.sin(theta)
        scale0 = np.sin((1.0 - s) * theta) / sin_theta
        scale1 = np.sin(s * theta) / sin_theta
    if d < 0:
        scale1 = -scale1
    return scale0 * a + scale1 * b


def fmt(x):
    return repr(float(x))


def write_csv(path, header, rows):
    with open(path, 'w') as f:
        f.write(','.join(header) + '\n')
        for row in rows:
            f.write(','.join(fmt(x) for x in row) + '\n')


def write_reference(reference, meta, imu_frame, names, sensors, threshold, st, d, fh, ft):
    """The bag's data as a heft CSV log, by the rules of docs/guide/import.md."""
    js, istamps, fstamps, ostamps, mstamps = (st['js'], st['istamps'], st['fstamps'],
                                              st['ostamps'], st['mstamps'])
    q, v, tau, pose, twist = d['q'], d['v'], d['tau'], d['pose'], d['twist']
    tau_cmd = d['tau_cmd']
    gyro, accel, orientation = d['gyro'], d['accel'], d['orientation']
    position, mocap_q = d['position'], d['mocap_q']
    origin = min(int(js[0]), int(istamps[0]), int(fstamps[0]), int(ostamps[0]), int(mstamps[0]))

    def seconds(ns):
        return np.array([float(int(x) - origin) / 1e9 for x in ns])

    jt, ot = seconds(js), seconds(ostamps)
    keep = (jt >= ot[0]) & (jt <= ot[-1])
    base_pose, base_twist, commanded = [], [], []
    for t in jt[keep]:
        # the commands share the joints' stamps: interpolated by the same rule, at s = 0 or 1
        c = min(int(np.searchsorted(jt, t, side='right')) - 1, len(jt) - 2)
        s = (t - jt[c]) / (jt[c + 1] - jt[c])
        commanded.append(tau_cmd[c] + s * (tau_cmd[c + 1] - tau_cmd[c]))
        k = min(int(np.searchsorted(ot, t, side='right')) - 1, len(ot) - 2)
        s = (t - ot[k]) / (ot[k + 1] - ot[k])
        base_pose.append(np.concatenate([pose[k, :3] + s * (pose[k + 1, :3] - pose[k, :3]),
                                         slerp(pose[k, 3:], pose[k + 1, 3:], s)]))
        base_twist.append(twist[k] + s * (twist[k + 1] - twist[k]))
    reference.mkdir(parents=True)
    with open(reference / 'metadata.yaml', 'w') as f:
        f.write(f'robot: {meta.get("robot", "")}\nbase_type: free-flyer\nunits: SI\n'
                f'imu_frame: {imu_frame}\nmocap_frame: base\n')
    write_csv(reference / 'joints.csv',
              ['time'] + [f'{f}/{n}' for f in ('q', 'v', 'tau', 'tau_cmd') for n in names] +
              [f'base_pose/{c}' for c in ('x', 'y', 'z', 'qx', 'qy', 'qz', 'qw')] +
              [f'base_twist/{c}' for c in ('vx', 'vy', 'vz', 'wx', 'wy', 'wz')],
              np.column_stack([jt[keep], q[keep], v[keep], tau[keep], np.array(commanded),
                               np.array(base_pose),
                               np.array(base_twist)]))
    write_csv(reference / 'imu.csv',
              ['time', 'gyro/x', 'gyro/y', 'gyro/z', 'accel/x', 'accel/y', 'accel/z',
               'orientation/qx', 'orientation/qy', 'orientation/qz', 'orientation/qw'],
              np.column_stack([seconds(istamps), gyro, accel, orientation]))
    wrench_header, wrench_columns, flags = ['time'], [seconds(fstamps)], []
    for name, frame in sensors:
        _, w = columns(fh, ft, f'wrench/{name}/')
        wrench_header += [f'wrench/{name}/{c}' for c in ('fx', 'fy', 'fz', 'tx', 'ty', 'tz')]
        wrench_columns.append(w)
        flags.append((np.linalg.norm(w[:, :3], axis=1) > threshold).astype(float))
    write_csv(reference / 'force_torque.csv', wrench_header, np.column_stack(wrench_columns))
    with open(reference / 'force_torque_sensors.csv', 'w') as f:
        f.write('sensor,frame\n' + ''.join(f'{n},{fr}\n' for n, fr in sensors))
    write_csv(reference / 'contacts.csv', ['time'] + [f'flags/{fr}' for _, fr in sensors],
              np.column_stack([seconds(fstamps)] + flags))
    write_csv(reference / 'mocap.csv',
              ['time', 'position/x', 'position/y', 'position/z', 'orientation/qx',
               'orientation/qy', 'orientation/qz', 'orientation/qw'],
              np.column_stack([seconds(mstamps), position, mocap_q]))


def main(argv):
    source, bag, reference, storage, threshold = Path(argv[1]), Path(argv[2]), Path(
        argv[3]), argv[4], float(argv[5])
    ts = get_typestore(Stores.ROS2_HUMBLE)
    T = ts.types
    meta = read_metadata(source / 'metadata.yaml')
    jh, jd = read_csv(source / 'joints.csv')
    ih, idata = read_csv(source / 'imu.csv')
    fh, fd = read_csv(source / 'force_torque.csv')
    sensors = [line.strip().split(',') for line in open(source / 'force_torque_sensors.csv')][1:]
    mh, md = read_csv(source / 'mocap.csv')

    joints = jd[::4]  # 2 kHz -> 500 Hz
    imu = idata[::5]  # 2 kHz -> 400 Hz
    ft = fd[::2]  # 2 kHz -> 1 kHz
    odom = jd[::20]  # 2 kHz -> 100 Hz
    names, q = columns(jh, joints, 'q/')
    _, v = columns(jh, joints, 'v/')
    _, tau = columns(jh, joints, 'tau/')
    _, tau_cmd = columns(jh, joints, 'tau_cmd/')
    _, pose = columns(jh, odom, 'base_pose/')
    _, twist = columns(jh, odom, 'base_twist/')
    _, gyro = columns(ih, imu, 'gyro/')
    _, accel = columns(ih, imu, 'accel/')
    _, orientation = columns(ih, imu, 'orientation/')
    _, position = columns(mh, md, 'position/')
    _, mocap_q = columns(mh, md, 'orientation/')

    def header(ns, frame=''):
        return T['std_msgs/msg/Header'](
            stamp=T['builtin_interfaces/msg/Time'](sec=int(ns // 1_000_000_000),
                                                   nanosec=int(ns % 1_000_000_000)),
            frame_id=frame)

    V3, Q = T['geometry_msgs/msg/Vector3'], T['geometry_msgs/msg/Quaternion']
    P = T['geometry_msgs/msg/Point']
    Pose = T['geometry_msgs/msg/Pose']

    def v3(x):
        return V3(x=float(x[0]), y=float(x[1]), z=float(x[2]))

    def quat(x):
        return Q(x=float(x[0]), y=float(x[1]), z=float(x[2]), w=float(x[3]))

    def pose_of(p, qq):
        return Pose(position=P(x=float(p[0]), y=float(p[1]), z=float(p[2])), orientation=quat(qq))

    zero9, zero36 = np.zeros(9), np.zeros(36)
    out = []  # (topic, type, stamp_ns, message)
    js = stamps(joints[:, 0])
    for k in range(len(joints)):
        out.append(('/joint_states', 'sensor_msgs/msg/JointState', js[k],
                    T['sensor_msgs/msg/JointState'](header=header(js[k]), name=names,
                                                    position=q[k].copy(), velocity=v[k].copy(),
                                                    effort=tau[k].copy())))
        # the commanded torques, efforts only, on the same clock
        out.append(('/joint_commands', 'sensor_msgs/msg/JointState', js[k],
                    T['sensor_msgs/msg/JointState'](header=header(js[k]), name=names,
                                                    position=np.zeros(0), velocity=np.zeros(0),
                                                    effort=tau_cmd[k].copy())))
    imu_frame = meta.get('imu_frame', '')
    istamps = stamps(imu[:, 0])
    for k in range(len(imu)):
        out.append(('/imu', 'sensor_msgs/msg/Imu', istamps[k],
                    T['sensor_msgs/msg/Imu'](header=header(istamps[k], imu_frame),
                                             orientation=quat(orientation[k]),
                                             orientation_covariance=zero9.copy(),
                                             angular_velocity=v3(gyro[k]),
                                             angular_velocity_covariance=zero9.copy(),
                                             linear_acceleration=v3(accel[k]),
                                             linear_acceleration_covariance=zero9.copy())))
    fstamps = stamps(ft[:, 0])
    for name, frame in sensors:
        _, w = columns(fh, ft, f'wrench/{name}/')
        for k in range(len(ft)):
            out.append((f'/ft/{name}', 'geometry_msgs/msg/WrenchStamped', fstamps[k],
                        T['geometry_msgs/msg/WrenchStamped'](
                            header=header(fstamps[k], frame),
                            wrench=T['geometry_msgs/msg/Wrench'](force=v3(w[k, :3]),
                                                                 torque=v3(w[k, 3:])))))
    ostamps = stamps(odom[:, 0])
    for k in range(len(odom)):
        out.append(('/odom', 'nav_msgs/msg/Odometry', ostamps[k],
                    T['nav_msgs/msg/Odometry'](
                        header=header(ostamps[k], 'odom'), child_frame_id='base',
                        pose=T['geometry_msgs/msg/PoseWithCovariance'](
                            pose=pose_of(pose[k, :3], pose[k, 3:]), covariance=zero36.copy()),
                        twist=T['geometry_msgs/msg/TwistWithCovariance'](
                            twist=T['geometry_msgs/msg/Twist'](linear=v3(twist[k, :3]),
                                                               angular=v3(twist[k, 3:])),
                            covariance=zero36.copy()))))
    mstamps = stamps(md[:, 0])
    for k in range(len(md)):
        out.append(('/mocap', 'geometry_msgs/msg/PoseStamped', mstamps[k],
                    T['geometry_msgs/msg/PoseStamped'](header=header(mstamps[k], 'world'),
                                                       pose=pose_of(position[k], mocap_q[k]))))

        # The same pose as a transform on /tf, beside an unrelated one the reader must skip.
        transforms = [
            T['geometry_msgs/msg/TransformStamped'](
                header=header(mstamps[k], 'world'), child_frame_id='base',
                transform=T['geometry_msgs/msg/Transform'](translation=v3(position[k]),
                                                           rotation=quat(mocap_q[k]))),
            T['geometry_msgs/msg/TransformStamped'](
                header=header(mstamps[k], 'world'), child_frame_id='table',
                transform=T['geometry_msgs/msg/Transform'](translation=v3([1, 0, 0]),
                                                           rotation=quat([0, 0, 0, 1])))]
        out.append(('/tf', 'tf2_msgs/msg/TFMessage', mstamps[k],
                    T['tf2_msgs/msg/TFMessage'](transforms=transforms)))

    out.sort(key=lambda m: (m[2], m[0]))
    plugin = StoragePlugin.MCAP if storage == 'mcap' else StoragePlugin.SQLITE3
    with Writer(bag, version=9, storage_plugin=plugin) as writer:
        connections = {}
        for topic, msgtype, ns, msg in out:
            if topic not in connections:
                connections[topic] = writer.add_connection(topic, msgtype, typestore=ts)
            writer.write(connections[topic], int(ns) + LATENCY_NS,
                         ts.serialize_cdr(msg, msgtype))

    write_reference(reference, meta, imu_frame, names, sensors, threshold,
                    dict(js=js, istamps=istamps, fstamps=fstamps, ostamps=ostamps,
                         mstamps=mstamps),
                    dict(q=q, v=v, tau=tau, tau_cmd=tau_cmd, pose=pose, twist=twist, gyro=gyro, accel=accel,
                         orientation=orientation, position=position, mocap_q=mocap_q),
                    fh, ft)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
