#!/usr/bin/env python3
"""Reads a ROS 2 bag (sqlite3 or MCAP) for `heft import` with rosbags (PyPI): lists its topics and
writes the messages of the requested topics as plain CSV files heft reads back.

    read_bag.py BAG OUT_DIR SPEC...

SPEC is a topic name, or `TOPIC|PARENT|CHILD` to take one transform out of a tf2_msgs/TFMessage
topic. OUT_DIR/manifest.json lists every topic of the bag (name, type, count) and, per SPEC in
order, its CSV file (OUT_DIR/<index>.csv) with the frame ids of its first message. Every CSV row
is one message: `header_ns` (the header stamp, ns), `receive_ns` (the bag's receive time, ns),
then the fields of its type (FIELDS below; JointState: position/<name>, velocity/<name>,
effort/<name>, each when the messages carry it). Floats are printed with repr, the shortest text that reads back to the same
double. A SPEC naming a topic the bag lacks or of a type heft does not read is listed with
`"file": null`; heft reports it. Exit 2 with one line on stderr for a path that is not a bag, or a
topic whose messages disagree (joint names that change between messages).
"""
import json
import sys
from pathlib import Path

from rosbags.highlevel import AnyReader
from rosbags.typesys import Stores, get_typestore

FIELDS = {
    'sensor_msgs/msg/Imu': ['orientation/x', 'orientation/y', 'orientation/z', 'orientation/w',
                            'orientation_valid', 'gyro/x', 'gyro/y', 'gyro/z', 'accel/x',
                            'accel/y', 'accel/z'],
    'geometry_msgs/msg/WrenchStamped': ['fx', 'fy', 'fz', 'tx', 'ty', 'tz'],
    'nav_msgs/msg/Odometry': ['x', 'y', 'z', 'qx', 'qy', 'qz', 'qw', 'vx', 'vy', 'vz', 'wx', 'wy',
                              'wz'],
    'geometry_msgs/msg/PoseStamped': ['x', 'y', 'z', 'qx', 'qy', 'qz', 'qw'],
    'tf2_msgs/msg/TFMessage': ['x', 'y', 'z', 'qx', 'qy', 'qz', 'qw'],
}
JOINT_STATE = 'sensor_msgs/msg/JointState'


class BagError(Exception):
    pass


def stamp_ns(stamp):
    return int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec)


def vec(v):
    return [v.x, v.y, v.z]


def quat(q):
    return [q.x, q.y, q.z, q.w]


def joint_state_rows(topic, messages):
    names, has_position, has_velocity, has_effort = None, None, None, None
    rows = []
    for k, (receive, msg) in enumerate(messages):
        if names is None:
            names = list(msg.name)
            has_position = len(msg.position) > 0  # a command topic may carry efforts only
            has_velocity, has_effort = len(msg.velocity) > 0, len(msg.effort) > 0
            order = list(range(len(names)))
        elif list(msg.name) != names:
            if sorted(msg.name) != sorted(names):
                raise BagError(f'topic {topic} message {k}: joint names {list(msg.name)} differ '
                               f'from the first message\'s {names}')
            order = [list(msg.name).index(n) for n in names]
        for field, wanted in (('position', has_position), ('velocity', has_velocity),
                              ('effort', has_effort)):
            count = len(getattr(msg, field))
            if count != (len(names) if wanted else 0):
                raise BagError(f'topic {topic} message {k}: {count} {field} values, the first '
                               f'message had {len(names) if wanted else 0}')
        row = [stamp_ns(msg.header.stamp), receive]
        if has_position:
            row += [msg.position[i] for i in order]
        if has_velocity:
            row += [msg.velocity[i] for i in order]
        if has_effort:
            row += [msg.effort[i] for i in order]
        rows.append(row)
    header = [f'position/{n}' for n in names] if has_position else []
    if has_velocity:
        header += [f'velocity/{n}' for n in names]
    if has_effort:
        header += [f'effort/{n}' for n in names]
    return header, rows


def message_row(msgtype, msg, transform=None):
    if msgtype == 'sensor_msgs/msg/Imu':
        # REP 145: orientation_covariance[0] == -1 means the driver gives no orientation.
        valid = 0 if msg.orientation_covariance[0] == -1 else 1
        return quat(msg.orientation) + [valid] + vec(msg.angular_velocity) + vec(
            msg.linear_acceleration)
    if msgtype == 'geometry_msgs/msg/WrenchStamped':
        return vec(msg.wrench.force) + vec(msg.wrench.torque)
    if msgtype == 'nav_msgs/msg/Odometry':
        p = msg.pose.pose
        return vec(p.position) + quat(p.orientation) + vec(msg.twist.twist.linear) + vec(
            msg.twist.twist.angular)
    if msgtype == 'geometry_msgs/msg/PoseStamped':
        return vec(msg.pose.position) + quat(msg.pose.orientation)
    if msgtype == 'tf2_msgs/msg/TFMessage':
        return vec(transform.transform.translation) + quat(transform.transform.rotation)
    raise AssertionError(msgtype)


def dump(reader, spec, index, out_dir):
    parts = spec.split('|')
    topic, parent, child = parts[0], parts[1] if len(parts) > 1 else None, parts[2] if len(
        parts) > 2 else None
    connections = [c for c in reader.connections if c.topic == topic]
    entry = {'spec': spec, 'topic': topic, 'file': None, 'type': None, 'frame_id': '',
             'child_frame_id': '', 'count': 0}
    if not connections:
        return entry
    msgtype = connections[0].msgtype
    entry['type'] = msgtype
    if msgtype != JOINT_STATE and msgtype not in FIELDS:
        return entry
    messages = ((t, reader.deserialize(raw, c.msgtype))
                for c, t, raw in reader.messages(connections=connections))
    if msgtype == JOINT_STATE:
        header, rows = joint_state_rows(topic, messages)
        first = None
    else:
        header, rows, first = FIELDS[msgtype], [], None
        for receive, msg in messages:
            if msgtype == 'tf2_msgs/msg/TFMessage':
                for tf in msg.transforms:
                    if tf.header.frame_id == parent and tf.child_frame_id == child:
                        rows.append([stamp_ns(tf.header.stamp), receive] +
                                    message_row(msgtype, msg, tf))
                        first = first or (parent, child)
                continue
            if first is None:
                first = (msg.header.frame_id, getattr(msg, 'child_frame_id', ''))
            rows.append([stamp_ns(msg.header.stamp), receive] + message_row(msgtype, msg))
    if first:
        entry['frame_id'], entry['child_frame_id'] = first
    path = out_dir / f'{index}.csv'
    with open(path, 'w') as f:
        f.write(','.join(['header_ns', 'receive_ns'] + header) + '\n')
        for row in rows:
            f.write(','.join([str(row[0]), str(row[1])] + [repr(float(x)) for x in row[2:]]) +
                    '\n')
    entry['file'] = path.name
    entry['count'] = len(rows)
    return entry


def main(argv):
    if len(argv) < 3:
        print('usage: read_bag.py BAG OUT_DIR SPEC...', file=sys.stderr)
        return 2
    bag, out_dir, specs = Path(argv[1]), Path(argv[2]), argv[3:]
    try:
        reader = AnyReader([bag], default_typestore=get_typestore(Stores.ROS2_HUMBLE))
        reader.open()
    except Exception as e:  # rosbags raises several types; all mean "not a readable bag"
        print(f'{bag}: not a readable ROS 2 bag (rosbags: {e})', file=sys.stderr)
        return 2
    try:
        topics = [{'name': c.topic, 'type': c.msgtype, 'count': c.msgcount}
                  for c in reader.connections]
        dumped = [dump(reader, spec, k, out_dir) for k, spec in enumerate(specs)]
    except BagError as e:
        print(f'{bag}: {e}', file=sys.stderr)
        return 2
    except Exception as e:  # a message rosbags cannot decode: the bag is damaged
        print(f'{bag}: cannot read its messages (rosbags: {e})', file=sys.stderr)
        return 2
    finally:
        reader.close()
    with open(out_dir / 'manifest.json', 'w') as f:
        json.dump({'topics': topics, 'dumped': dumped}, f, indent=1)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
