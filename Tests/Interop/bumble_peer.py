"""A Bumble peer for ancs-sim's interop tests.

Two Bumble virtual controllers share an in-process LocalLink. One is exposed to the Swift
host as an H4-over-TCP server (Bumble's tcp-server transport) on a port the OS picks; a
Bumble Device runs on the other. Prints "ready PORT" once the Swift host may connect, then
one line per step ("found ...", "mtu ...", "read ...", "disconnected ..."), and "done" or
"error ..." at the end. Exits by itself; the Swift test kills it if it takes too long.

    python bumble_peer.py central      Bumble scans for a device soliciting ANCS, connects,
                                       exchanges MTU, discovers the ANCS service and reads the
                                       characteristic the Swift GATT server holds there.
    python bumble_peer.py peripheral   Bumble advertises the ANCS solicitation and serves a
                                       small GATT service; the Swift host connects to it.
    python bumble_peer.py pair-peripheral sc|legacy
                                       As peripheral, but the value needs encryption, Bumble
                                       pairs Just Works (bonding, mitm=False, SC or legacy)
                                       when the Swift central asks, and then accepts a second
                                       connection that encrypts with the bond.
    python bumble_peer.py pair-peripheral sc|legacy passkey
                                       As pair-peripheral, once, but Bumble asks for MITM
                                       protection and shows a passkey ("passkey 123456"):
                                       DisplayOnly, so the Swift central types it (Passkey
                                       Entry).
    python bumble_peer.py pair-peripheral sc numeric
                                       The same with DisplayYesNo: Numeric Comparison; Bumble
                                       says the number it shows ("compare 012345") and agrees.
    python bumble_peer.py mitm-accessory sc|legacy passkey|numeric
                                       An accessory with a display that demands MITM: it
                                       advertises the ANCS solicitation and asks the central
                                       that connects to pair (Security Request), showing a
                                       passkey or comparing a number as above, then waits for
                                       the disconnection.
    python bumble_peer.py mitm-phone sc|legacy passkey|numeric|keyboard-display
                                       A phone with a display: Bumble scans for a device that
                                       solicits ANCS, connects, and pairs with MITM when it
                                       asks (Security Request): DisplayOnly showing passkey
                                       123456 ("passkey 123456"), or DisplayYesNo comparing a
                                       number ("compare 012345"); then "paired ..." or
                                       "pairing-failed REASON", and it disconnects. With
                                       keyboard-display it pairs as an iPhone does
                                       (KeyboardDisplay): it says "enter-passkey" and types
                                       the passkey given on stdin ("passkey 012345"), or
                                       shows its own, or agrees to a compared number.
    python bumble_peer.py pair-peripheral sc|legacy forget
                                       The same, but Bumble forgets its bonds ("forgot")
                                       before the second connection, as a reset accessory
                                       does, and accepts a third.
    python bumble_peer.py radio        No Bumble device: two virtual controllers on one link,
                                       both served over TCP ("ready PORT PORT"), for two Swift
                                       hosts (ancs phone and ancs watch) to meet over the air.
                                       Runs until killed.
    python bumble_peer.py radio uart   The same, but the watch's controller is served as H4 on a
                                       pseudo-terminal ("ready PORT PATH", PATH a symbolic link
                                       to it), as a controller on a serial port would be.
    python bumble_peer.py pair-central sc|legacy
                                       Bumble connects to the Swift peripheral twice: it pairs
                                       (or, the second time, encrypts with the bond) when the
                                       Swift host sends a Security Request, then reads the
                                       characteristic that needs encryption.
    python bumble_peer.py pair-central sc|legacy forget
                                       The same, but Bumble forgets its bonds ("forgot")
                                       before the second connection, as a phone whose user
                                       chose "Forget This Device", and so pairs afresh.
    python bumble_peer.py ancs-client COUNT
                                       Bumble's own AncsClient (bumble.profiles.ancs) on a
                                       device that advertises the ANCS solicitation: pairs on
                                       its Security Request once the Swift phone connects,
                                       keeps the ATT_MTU at 23, subscribes, and for COUNT
                                       new notifications prints
                                       "attributes {JSON}" (every attribute kind) and
                                       "app {JSON}" (the display name); then a positive action
                                       on the first, a negative one on the second ("action",
                                       then each one's Removed event), and "refused {JSON}"
                                       for the attributes of the removed first one.
    python bumble_peer.py ams-client   Bumble's own AmsClient (bumble.profiles.ams) on a device
                                       that advertises the AMS solicitation (not ANCS's):
                                       pairs on its Security Request once the Swift phone
                                       connects, subscribes and registers for every attribute,
                                       prints each Entity Update as notified
                                       ("update {JSON}", with its Truncated flag) and the
                                       client's whole state after each of its events
                                       ("state {JSON}"); takes `command NAME` (a
                                       RemoteCommandId name: "sent NAME" once written) and
                                       `quit` on standard input.
    python bumble_peer.py ams-phone    A phone built on Bumble's Ams (and Ancs) template
                                       services: scans for the Swift watch's ANCS
                                       solicitation, connects, pairs on its Security Request,
                                       and plays a media player behind the template's
                                       characteristics (ATT_MTU 185 at most): prints
                                       "registered {JSON}", "notified {JSON}",
                                       "selected {JSON}", "read {JSON}" and "command {JSON}"
                                       (a Remote Command obeyed) as the watch uses it, each
                                       write with the ATT PDU that carried it (Write Request
                                       or Write Command); runs until the watch disconnects.
    python bumble_peer.py ancs-accessory TRANSPORT
                                       An ANCS accessory built on Bumble's AncsClient, as a
                                       Bumble host on the controller at TRANSPORT (e.g.
                                       tcp-client:127.0.0.1:PORT, a port of `radio`), for
                                       `ancs conform accessory --bluetooth ... --spawn`. Prints
                                       event lines as `ancs watch --headless` does and takes
                                       `positive UID`, `negative UID`, `quit` on stdin.
"""

import asyncio
import datetime
import json
import os
import socket
import sys
import tempfile

from bumble.controller import Controller
from bumble.core import UUID
from bumble.device import Device, Peer
from bumble.gatt import Characteristic, CharacteristicValue, Service
from bumble.hci import Address
from bumble.link import LocalLink
from bumble.pairing import PairingConfig, PairingDelegate
from bumble.profiles.ams import (
    Ams,
    AmsClient,
    AmsProxy,
    EntityId,
    EntityUpdateFlags,
    PlayerAttributeId,
    QueueAttributeId,
    RemoteCommandId,
    TrackAttributeId,
)
from bumble.profiles.ancs import (
    ActionId,
    Ancs,
    AncsClient,
    AppAttributeId,
    CommandError,
    EventId,
    NotificationAttributeId,
)
from bumble.transport import open_transport
from bumble.transport.pty import open_pty_transport
from bumble.transport.tcp_server import open_tcp_server_transport_with_socket

ANCS = UUID('7905F431-B5CE-4E99-A40F-4B1E122D00D0')
AMS = UUID('89D3502B-0F36-433A-8EF4-C502AD55F8DC')
TEST_SERVICE = UUID('A0B40001-926D-4D61-98DF-8C5C62EE53B3')
TEST_CHARACTERISTIC = UUID('A0B40002-926D-4D61-98DF-8C5C62EE53B3')
TEST_VALUE = 'hello from bumble'.encode()
AD_SOLICITATION_128 = 0x15
AD_COMPLETE_NAME = 0x09


def say(*parts):
    print(*parts, flush=True)


def ad_structures(data: bytes):
    """(type, value) pairs of advertising data, parsed here rather than by Bumble."""
    index = 0
    while index < len(data) and data[index] != 0:
        length = data[index]
        yield data[index + 1], data[index + 2 : index + 1 + length]
        index += 1 + length


def solicits_ancs(data: bytes) -> bool:
    wanted = bytes(ANCS)  # little-endian, as on the air
    for ad_type, value in ad_structures(data):
        if ad_type == AD_SOLICITATION_128:
            if any(value[i : i + 16] == wanted for i in range(0, len(value) - 15, 16)):
                return True
    return False


def local_name(data: bytes):
    for ad_type, value in ad_structures(data):
        if ad_type == AD_COMPLETE_NAME:
            return value.decode()
    return None


async def find_ancs_advertiser(device: Device):
    """Scan until a device solicits ANCS; its address and name."""
    found = asyncio.get_running_loop().create_future()

    def on_advertisement(advertisement):
        data = bytes(advertisement.data)
        if solicits_ancs(data) and not found.done():
            found.set_result((advertisement.address, local_name(data)))

    device.on('advertisement', on_advertisement)
    await device.start_scanning(filter_duplicates=True)
    address, name = await found
    await device.stop_scanning()
    return address, name


async def read_ancs_characteristic(peer: Peer) -> str:
    """Discover the ANCS service of the Swift GATT server and read its one characteristic."""
    services = await peer.discover_service(ANCS)
    if not services:
        raise RuntimeError('no ANCS service found')
    characteristics = await peer.discover_characteristics(service=services[0])
    say('characteristics', len(characteristics))
    value = await peer.read_value(characteristics[0])
    return value.decode()


async def disconnect(connection):
    """Disconnect and print the reason."""
    disconnected = asyncio.get_running_loop().create_future()
    connection.on('disconnection', lambda reason: disconnected.set_result(reason))
    await connection.disconnect()
    say('disconnected', await disconnected)


async def bumble_central(device: Device):
    """Scan for a device soliciting ANCS, connect, and use its GATT server."""
    address, name = await find_ancs_advertiser(device)
    say('found', address, name)
    connection = await device.connect(address)
    say('connected', connection.handle)
    peer = Peer(connection)
    mtu = await peer.request_mtu(185)
    say('mtu', mtu)
    say('read', await read_ancs_characteristic(peer))
    await disconnect(connection)


async def advertise_until_connected(device: Device, name: str, attempt: int = 0, service: UUID = ANCS):
    """Advertise connectable with flags, the solicitation of `service` (ANCS unless told) and
    `name` (every 20 ms) until a central connects; the connection."""
    encoded = name.encode()
    data = (
        bytes([2, 0x01, 0x06])
        + bytes([17, AD_SOLICITATION_128])
        + bytes(service)
        + bytes([len(encoded) + 1, AD_COMPLETE_NAME])
        + encoded
    )
    connected = asyncio.get_running_loop().create_future()
    device.once('connection', lambda connection: connected.set_result(connection))
    await device.start_advertising(
        advertising_data=data, advertising_interval_min=20, advertising_interval_max=20
    )
    say('advertising', attempt)
    return await connected


async def forget_bonds(device: Device):
    """Deletes every bond Bumble keeps, and says so."""
    await device.keystore.delete_all()
    say('forgot')


async def bumble_peripheral(
    device: Device, connections: int = 1, encrypted: bool = False, forget_before: int | None = None
):
    """Advertise the ANCS solicitation with a name, serve a small service (its value readable
    only over an encrypted link if `encrypted`), and await the host's connections, one after
    the other; forget every bond before connection number `forget_before` (from 0)."""
    loop = asyncio.get_running_loop()
    permissions = Characteristic.READABLE
    if encrypted:
        permissions |= Characteristic.READ_REQUIRES_ENCRYPTION
    device.add_service(
        Service(
            TEST_SERVICE,
            [
                Characteristic(
                    TEST_CHARACTERISTIC, Characteristic.Properties.READ, permissions, TEST_VALUE
                )
            ],
        )
    )
    for attempt in range(connections):
        if attempt == forget_before:
            await forget_bonds(device)
        connection = await advertise_until_connected(device, 'Bumble watch', attempt)
        report_security(connection)
        say('connected', connection.peer_address)
        disconnected = loop.create_future()
        connection.on('disconnection', lambda reason: disconnected.set_result(reason))
        say('disconnected', await disconnected)


async def bumble_parameters_peripheral(device: Device):
    """Advertise the ANCS solicitation; once a central connects, ask it for connection
    parameters twice over L2CAP (Core Vol 3 Part A 4.20), as accessories do: 7.5-15 ms,
    which Apple's Accessory Design Guidelines refuse, then 30-45 ms, latency 0, 5 s, which
    they allow; say how each was answered."""
    connection = await advertise_until_connected(device, 'Bumble ring')
    say('connected', connection.peer_address)
    for interval_min, interval_max in ((7.5, 15), (30, 45)):
        try:
            await connection.update_parameters(interval_min, interval_max, 0, 5000, use_l2cap=True)
            say('update', interval_min, interval_max, 'accepted')
        except Exception as error:
            say('update', interval_min, interval_max, 'rejected', type(error).__name__)
    await disconnect(connection)


def use_just_works(device: Device, sc: bool):
    """Pairing as an ANCS accessory does it: no IO, no MITM, bonding."""
    device.pairing_config_factory = lambda connection: PairingConfig(
        sc=sc,
        mitm=False,
        bonding=True,
        delegate=PairingDelegate(io_capability=PairingDelegate.NO_OUTPUT_NO_INPUT),
    )


class ShowingDelegate(PairingDelegate):
    """An accessory with a display: it shows a fixed passkey (Passkey Entry), or shows the
    number of a Numeric Comparison and agrees, saying each."""

    def __init__(self, io_capability):
        super().__init__(io_capability=io_capability)

    async def generate_passkey(self) -> int:
        return 123456

    async def display_number(self, number: int, digits: int) -> None:
        say('passkey', f'{number:06d}')

    async def compare_numbers(self, number: int, digits: int) -> bool:
        say('compare', f'{number:06d}')
        return True


class KeyboardDisplayDelegate(PairingDelegate):
    """A phone as an iPhone is built, KeyboardDisplay: it types the passkey the test hands
    it on standard input (`passkey NNNNNN`, after saying `enter-passkey`), shows its own
    passkey, and agrees to a compared number, saying each."""

    def __init__(self):
        super().__init__(io_capability=PairingDelegate.DISPLAY_OUTPUT_AND_KEYBOARD_INPUT)
        self.lines = None

    async def get_number(self):
        if self.lines is None:
            self.lines = stdin_lines()
        say('enter-passkey')
        while True:
            words = (await self.lines.get()).split()
            if not words:
                return None
            if words[0] == 'passkey' and len(words) == 2 and words[1].isdigit():
                return int(words[1])

    async def display_number(self, number: int, digits: int) -> None:
        say('passkey', f'{number:06d}')

    async def compare_numbers(self, number: int, digits: int) -> bool:
        say('compare', f'{number:06d}')
        return True

    async def confirm(self, auto: bool = False) -> bool:
        return True


def use_keyboard_display(device: Device, sc: bool):
    """Pairing as an iPhone does it: KeyboardDisplay, MITM asked, bonding."""
    delegate = KeyboardDisplayDelegate()
    device.pairing_config_factory = lambda connection: PairingConfig(
        sc=sc, mitm=True, bonding=True, delegate=delegate
    )


def use_mitm(device: Device, sc: bool, numeric: bool):
    """Pairing as an accessory with a screen does it: MITM, bonding; DisplayOnly (the
    central types the passkey shown) or DisplayYesNo (Numeric Comparison in SC)."""
    io = PairingDelegate.DISPLAY_OUTPUT_AND_YES_NO_INPUT if numeric else PairingDelegate.DISPLAY_OUTPUT_ONLY
    device.pairing_config_factory = lambda connection: PairingConfig(
        sc=sc, mitm=True, bonding=True, delegate=ShowingDelegate(io)
    )


async def bumble_mitm_accessory(device: Device):
    """Advertise; ask the central that connects to pair; report; await the disconnection."""
    loop = asyncio.get_running_loop()
    connection = await advertise_until_connected(device, 'Bumble ring')
    report_security(connection)
    say('connected', connection.peer_address)
    disconnected = loop.create_future()
    connection.on('disconnection', lambda reason: disconnected.set_result(reason))
    device.request_pairing(connection)
    say('disconnected', await disconnected)


async def bumble_mitm_phone(device: Device):
    """Connect to the ANCS advertiser; pair on its Security Request; disconnect."""
    loop = asyncio.get_running_loop()
    address, _ = await find_ancs_advertiser(device)
    connection = await device.connect(address)
    say('connected', connection.peer_address)
    report_security(connection)
    done = loop.create_future()
    connection.on('pairing', lambda keys: done.done() or done.set_result(None))
    connection.on('pairing_failure', lambda reason: done.done() or done.set_result(None))
    connection.on(
        'security_request', lambda auth_req: asyncio.ensure_future(device.pair(connection))
    )
    await asyncio.wait_for(done, 20)
    await disconnect(connection)


def report_security(connection):
    """Prints the pairing and encryption events of a connection."""
    connection.on('pairing', lambda keys: say('paired', 'ltk' if keys.ltk else 'legacy'))
    connection.on('pairing_failure', lambda reason: say('pairing-failed', reason))
    connection.on(
        'connection_encryption_change', lambda: say('encryption', connection.encryption)
    )
    connection.on('connection_encryption_failure', lambda error: say('encryption-failed', error))


async def bumble_pairing_central(device: Device, sc: bool, forget: bool = False):
    """Connect to the Swift peripheral twice; pair or encrypt on its Security Request; with
    `forget`, forget the bond between the two."""
    loop = asyncio.get_running_loop()
    use_just_works(device, sc)
    address, _ = await find_ancs_advertiser(device)
    for attempt in range(2):
        if forget and attempt == 1:
            await forget_bonds(device)
        connection = await device.connect(address)
        say('connected', attempt)
        report_security(connection)
        encrypted = loop.create_future()
        connection.on(
            'connection_encryption_change', lambda: encrypted.done() or encrypted.set_result(None)
        )

        async def on_security_request(auth_req):
            try:
                keys = await device.keystore.get(str(connection.peer_address))
                if keys is not None:
                    await device.encrypt(connection)
                else:
                    await device.pair(connection)
            except Exception as error:
                if not encrypted.done():
                    encrypted.set_exception(error)

        connection.on(
            'security_request', lambda auth_req: asyncio.ensure_future(on_security_request(auth_req))
        )
        await encrypted
        say('read', await read_ancs_characteristic(Peer(connection)))
        await disconnect(connection)


# Every notification attribute kind, with the maximum lengths Title, Subtitle and Message
# need; 64 bytes cut a long message.
NOTIFICATION_ATTRIBUTES = [
    NotificationAttributeId.APP_IDENTIFIER,
    (NotificationAttributeId.TITLE, 100),
    (NotificationAttributeId.SUBTITLE, 100),
    (NotificationAttributeId.MESSAGE, 64),
    NotificationAttributeId.MESSAGE_SIZE,
    NotificationAttributeId.DATE,
    NotificationAttributeId.POSITIVE_ACTION_LABEL,
    NotificationAttributeId.NEGATIVE_ACTION_LABEL,
]


def say_json(kind: str, **fields):
    say(kind, json.dumps(fields))


async def pair_on_own_request(connection):
    """Send a Security Request (Just Works, bonding) and wait until pairing completes."""
    paired = asyncio.get_running_loop().create_future()
    connection.on('pairing', lambda keys: paired.done() or paired.set_result(keys))

    def on_failure(reason):
        if not paired.done():
            paired.set_exception(RuntimeError(f'pairing failed: {reason}'))

    connection.on('pairing_failure', on_failure)
    connection.request_pairing()
    await asyncio.wait_for(paired, 20)


async def next_event(events: asyncio.Queue, event_id: EventId, uid: int | None = None):
    """The next Notification Source event `event_id` (for `uid`, if given), printing every
    event on the way."""
    while True:
        notification = await asyncio.wait_for(events.get(), 30)
        say_json(
            'notification',
            event=notification.event_id.name,
            uid=notification.notification_uid,
            category=notification.category_id.name,
            flags=int(notification.event_flags),
        )
        if notification.event_id == event_id and uid in (None, notification.notification_uid):
            return notification


async def fetch_attributes(client: AncsClient, uid: int) -> str:
    """Every notification attribute of `uid`, printed as one JSON line; its AppIdentifier."""
    values = {}
    for attribute in await client.get_notification_attributes(uid, NOTIFICATION_ATTRIBUTES):
        value = attribute.value
        if isinstance(value, datetime.datetime):
            value = value.strftime('%Y%m%dT%H%M%S')
        values[attribute.attribute_id.name] = value
    say_json('attributes', uid=uid, **values)
    return values['APP_IDENTIFIER']


async def bumble_ancs_client(device: Device, count: int):
    """Bumble's own AncsClient against the Swift phone: advertise the ANCS solicitation, pair
    on our Security Request, subscribe, fetch every attribute of `count` new notifications
    and each one's app name, perform a positive action on the first and a negative one on
    the second (each must be removed), and check that a removed UID is refused."""
    use_just_works(device, sc=True)
    connection = await advertise_until_connected(device, 'Bumble ANCS client')
    say('connected', connection.peer_address)
    report_security(connection)
    await pair_on_own_request(connection)
    peer = Peer(connection)
    # ATT_MTU stays 23: Bumble writes a Control Point command longer than ATT_MTU - 3 (a Get
    # App Attributes for com.apple.mobilemail is 23 bytes) as a long write, Prepare Write
    # Requests and an Execute Write, which the phone must take.
    client = await AncsClient.for_peer(peer)
    if client is None:
        raise RuntimeError('no ANCS service found')
    events = asyncio.Queue()
    client.on(client.EVENT_NOTIFICATION, events.put_nowait)
    await client.start()
    say('subscribed')
    uids = []
    for _ in range(count):
        added = await next_event(events, EventId.NOTIFICATION_ADDED)
        uids.append(added.notification_uid)
    for uid in uids:
        app = await fetch_attributes(client, uid)
        names = await client.get_app_attributes(app, [AppAttributeId.DISPLAY_NAME])
        say_json('app', app=app, **{name.attribute_id.name: name.value for name in names})
    for uid, action in zip(uids, (ActionId.POSITIVE, ActionId.NEGATIVE)):
        await client.perform_action(uid, action)
        say_json('action', uid=uid, action=action.name)
        await next_event(events, EventId.NOTIFICATION_REMOVED, uid)
    try:
        await client.get_notification_attributes(uids[0], [NotificationAttributeId.APP_IDENTIFIER])
        raise RuntimeError(f'the attributes of removed notification {uids[0]} were answered')
    except CommandError as error:
        say_json('refused', uid=uids[0], error=error.error_code.name)
    await disconnect(connection)


def ams_state(client: AmsClient) -> dict:
    """Everything an AmsClient holds, as JSON fields."""
    info = client.player_playback_info
    return dict(
        name=client.player_name,
        playbackState=info.playback_state.name,
        playbackRate=info.playback_rate,
        elapsed=info.elapsed_time,
        volume=client.player_volume,
        index=client.queue_index,
        count=client.queue_count,
        shuffle=client.queue_shuffle_mode.name,
        repeat=client.queue_repeat_mode.name,
        artist=client.track_artist,
        album=client.track_album,
        title=client.track_title,
        duration=client.track_duration,
        commands=sorted(command.name for command in client.supported_commands),
    )


def stdin_lines() -> asyncio.Queue:
    """Standard input's lines, as they come; an empty string at its end."""
    loop = asyncio.get_running_loop()
    lines = asyncio.Queue()

    def read_line():
        line = sys.stdin.readline()
        if not line:
            loop.remove_reader(sys.stdin.fileno())
        lines.put_nowait(line.strip())

    loop.add_reader(sys.stdin.fileno(), read_line)
    return lines


async def bumble_ams_client(device: Device):
    """Bumble's own AmsClient against the Swift phone: advertise the AMS solicitation, pair
    on our Security Request, subscribe (AmsClient.start) and register for every attribute
    of the player, the queue and the track (AmsClient.observe). Print each Entity Update as
    it is notified, Truncated flag included, and the client's state after each of its
    events (a truncated value is read whole by the client before its event); then send the
    Remote Commands named on standard input until `quit`."""
    use_just_works(device, sc=True)
    device.gatt_server.max_mtu = 185  # as an iPhone's ATT_MTU often is: a long title is cut
    commands = stdin_lines()
    connection = await advertise_until_connected(device, 'Bumble AMS client', service=AMS)
    say('connected', connection.peer_address)
    report_security(connection)
    await pair_on_own_request(connection)
    proxy = await Peer(connection).discover_service_and_create_proxy(AmsProxy)
    if proxy is None:
        raise RuntimeError('no AMS service found')
    client = AmsClient(proxy)

    def on_update(data: bytes):
        say_json(
            'update',
            entity=EntityId(data[0]).name,
            attribute=data[1],
            truncated=bool(data[2] & EntityUpdateFlags.TRUNCATED),
            value=data[3:].decode(errors='replace'),
        )

    proxy.entity_update.on(proxy.entity_update.EVENT_UPDATE, on_update)
    for event in (name for name in dir(AmsClient) if name.startswith('EVENT_')):
        kind = getattr(AmsClient, event)
        client.on(kind, lambda kind=kind: say_json('state', event=kind, **ams_state(client)))
    await client.start()
    await client.observe(EntityId.PLAYER, list(PlayerAttributeId))
    await client.observe(EntityId.QUEUE, list(QueueAttributeId))
    await client.observe(EntityId.TRACK, list(TrackAttributeId))
    say('observing', connection.att_mtu)
    while True:
        words = (await commands.get()).split()
        if words in ([], ['quit']):
            break
        if len(words) == 2 and words[0] == 'command':
            await client.command(RemoteCommandId[words[1]])
            say('sent', words[1])
    await disconnect(connection)


# What the Bumble phone plays: two tracks, the second's title longer than one Entity Update
# notification at ATT_MTU 185 (179 bytes of value): 2-, 3- and 4-byte UTF-8, 312 bytes.
AMS_PHONE_TRACKS = [
    dict(artist='Björk', album='Homogenic', title='Jóga — 東京 🚄', duration='305.0'),
    dict(artist='Sigur Rós', album='( )', title='Ünïcødé 京都 🍜 ' * 12, duration='431.5'),
]
AMS_PHONE_COMMANDS = [
    RemoteCommandId.PLAY,
    RemoteCommandId.PAUSE,
    RemoteCommandId.TOGGLE_PLAY_PAUSE,
    RemoteCommandId.NEXT_TRACK,
    RemoteCommandId.PREVIOUS_TRACK,
    RemoteCommandId.VOLUME_UP,
    RemoteCommandId.VOLUME_DOWN,
]


class BumbleMediaSource:
    """A media player behind Bumble's Ams template service, its behaviour on the
    template's characteristics (CharacteristicValue callbacks): registrations on Entity
    Update (answered with the current values, then each change), a selection on Entity
    Attribute (read whole), and Remote Commands, which it obeys. Values longer than one
    notification are cut on a character boundary and flagged Truncated."""

    def __init__(self, device: Device):
        self.device = device
        self.ams = Ams()
        self.index = 0
        self.playing = True
        self.volume = 0.75
        self.registered = {}
        self.selected = None
        self.tasks = set()
        self.writes = {}  # value handle: how it was last written (the ATT PDU's name)
        server = device.gatt_server
        handle_pdu = server.on_gatt_pdu

        def note_write(bearer, pdu):
            if pdu.name in ('ATT_WRITE_REQUEST', 'ATT_WRITE_COMMAND'):
                self.writes[pdu.attribute_handle] = pdu.name
            handle_pdu(bearer, pdu)

        server.on_gatt_pdu = note_write  # only to tell Write Request from Write Command
        self.ams.remote_command_characteristic.value = CharacteristicValue(write=self.on_remote_command)
        self.ams.entity_update_characteristic.value = CharacteristicValue(write=self.on_entity_update)
        self.ams.entity_attribute_characteristic.value = CharacteristicValue(
            read=self.on_read, write=self.on_select
        )
        device.add_service(Ancs())  # the watch starts AMS after its ANCS subscriptions
        device.add_service(self.ams)
        device.on('characteristic_subscription', self.on_subscription)

    def value(self, entity: int, attribute: int) -> str:
        track = AMS_PHONE_TRACKS[self.index]
        if entity == EntityId.PLAYER:
            playback = f'{int(self.playing)},{float(self.playing)},12.5'
            return ['Bumble Player', playback, str(self.volume)][attribute]
        if entity == EntityId.QUEUE:
            return [str(self.index), str(len(AMS_PHONE_TRACKS)), '0', '0'][attribute]
        return track[TrackAttributeId(attribute).name.lower()]

    def later(self, work):
        """Runs `work` (a coroutine) after the write being answered now."""
        task = asyncio.ensure_future(work)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def on_subscription(self, connection, characteristic, notify_enabled, indicate_enabled):
        if characteristic is self.ams.remote_command_characteristic and notify_enabled:
            self.later(
                self.device.notify_subscriber(
                    connection, characteristic, bytes(AMS_PHONE_COMMANDS), force=True
                )
            )

    def on_entity_update(self, connection, value: bytes):
        entity = EntityId(value[0])
        self.registered[entity] = list(value[1:])
        say_json(
            'registered',
            entity=entity.name,
            attributes=list(value[1:]),
            write=self.writes.get(self.ams.entity_update_characteristic.handle),
        )
        self.later(self.notify(connection, [(entity, attribute) for attribute in value[1:]]))

    async def notify(self, connection, changed):
        """One Entity Update per registered attribute in `changed`."""
        capacity = connection.att_mtu - 6
        for entity, attribute in changed:
            if attribute not in self.registered.get(entity, []):
                continue
            whole = self.value(entity, attribute).encode()
            sent = whole[:capacity].decode(errors='ignore').encode()  # whole characters
            truncated = len(sent) < len(whole)
            flags = EntityUpdateFlags.TRUNCATED if truncated else 0
            await self.device.notify_subscriber(
                connection, self.ams.entity_update_characteristic, bytes([entity, attribute, flags]) + sent
            )
            say_json(
                'notified',
                entity=entity.name,
                attribute=attribute,
                truncated=truncated,
                value=sent.decode(),
            )

    def on_select(self, connection, value: bytes):
        self.selected = (value[0], value[1])
        say_json(
            'selected',
            entity=EntityId(value[0]).name,
            attribute=value[1],
            write=self.writes.get(self.ams.entity_attribute_characteristic.handle),
        )

    def on_read(self, connection) -> bytes:
        whole = self.value(*self.selected) if self.selected else ''
        say_json('read', size=len(whole.encode()))
        return whole.encode()

    def on_remote_command(self, connection, value: bytes):
        command = RemoteCommandId(value[0])
        say_json(
            'command',
            command=command.name,
            write=self.writes.get(self.ams.remote_command_characteristic.handle),
        )
        playback = [(EntityId.PLAYER, PlayerAttributeId.PLAYBACK_INFO)]
        changed = []
        if command in (RemoteCommandId.PLAY, RemoteCommandId.PAUSE, RemoteCommandId.TOGGLE_PLAY_PAUSE):
            wanted = {RemoteCommandId.PLAY: True, RemoteCommandId.PAUSE: False}
            self.playing = wanted.get(command, not self.playing)
            changed = playback
        elif command in (RemoteCommandId.NEXT_TRACK, RemoteCommandId.PREVIOUS_TRACK):
            step = 1 if command == RemoteCommandId.NEXT_TRACK else -1
            self.index = min(max(self.index + step, 0), len(AMS_PHONE_TRACKS) - 1)
            changed = [(EntityId.QUEUE, QueueAttributeId.INDEX)]
            changed += [(EntityId.TRACK, attribute) for attribute in TrackAttributeId] + playback
        elif command in (RemoteCommandId.VOLUME_UP, RemoteCommandId.VOLUME_DOWN):
            step = 0.0625 if command == RemoteCommandId.VOLUME_UP else -0.0625
            self.volume = min(max(self.volume + step, 0.0), 1.0)
            changed = [(EntityId.PLAYER, PlayerAttributeId.VOLUME)]
        self.later(self.notify(connection, changed))


async def bumble_ams_phone(device: Device):
    """A phone built on Bumble's Ams template: find the Swift watch by its ANCS
    solicitation, connect, pair when it sends a Security Request, and serve the media
    player (BumbleMediaSource) until the watch disconnects."""
    use_just_works(device, sc=True)
    device.gatt_server.max_mtu = 185  # as an iPhone's ATT_MTU often is: a long title is cut
    BumbleMediaSource(device)
    address, name = await find_ancs_advertiser(device)
    say('found', address, name)
    connection = await device.connect(address)
    say('connected', connection.peer_address)
    report_security(connection)
    disconnected = asyncio.get_running_loop().create_future()
    connection.on('disconnection', lambda reason: disconnected.done() or disconnected.set_result(reason))

    async def on_security_request(auth_req):
        try:
            await device.pair(connection)
        except Exception as error:
            say('pairing-failed', error)

    connection.on('security_request', lambda auth_req: asyncio.ensure_future(on_security_request(auth_req)))
    say('disconnected', await disconnected)


async def secure(connection):
    """Send a Security Request and wait until the link is encrypted: the central pairs, or
    encrypts with the bond of an earlier connection."""
    done = asyncio.get_running_loop().create_future()

    def check(*_):
        if connection.encryption and not done.done():
            done.set_result(None)

    def failed(reason):
        if not done.done():
            done.set_exception(RuntimeError(f'pairing failed: {reason}'))

    connection.on('connection_encryption_change', check)
    connection.on('pairing', check)
    connection.on('pairing_failure', failed)
    check()
    if not done.done():
        connection.request_pairing()
    await asyncio.wait_for(done, 20)


def emit(**fields):
    """One event line as `ancs watch --headless` prints them (Protocol/events.md)."""
    print(json.dumps(fields), flush=True)


async def ancs_accessory_session(connection, wearer: asyncio.Queue):
    """One connection of the AncsClient accessory: pair on its own Security Request,
    subscribe (AncsClient.start), then fetch each Added or Modified notification's attributes
    and its app's display name (once per app), report Removed ones, and perform the
    wearer's actions. Whatever AncsClient raises is reported as an error event and ends the
    session (the accessory waits for the next connection)."""
    try:
        await secure(connection)
        client = await AncsClient.for_peer(Peer(connection))
        if client is None:
            raise RuntimeError('no ANCS service found')
        events = asyncio.Queue()
        client.on(client.EVENT_NOTIFICATION, events.put_nowait)
        await client.start()

        async def act():
            while True:
                kind, uid = await wearer.get()
                action = ActionId.POSITIVE if kind == 'positive' else ActionId.NEGATIVE
                try:
                    await client.perform_action(uid, action)
                    emit(event='action', uid=uid, action=kind)
                except CommandError as error:
                    emit(event='error', message=f'action on UID {uid}: {error.error_code.name}')

        actor = asyncio.create_task(act())
        names = {}
        try:
            while True:
                notification = await events.get()
                uid = notification.notification_uid
                if notification.event_id == EventId.NOTIFICATION_REMOVED:
                    emit(event='removed', uid=uid)
                    continue
                try:
                    values = {}
                    for attribute in await client.get_notification_attributes(uid, NOTIFICATION_ATTRIBUTES):
                        value = attribute.value
                        if isinstance(value, datetime.datetime):
                            value = value.strftime('%Y%m%dT%H%M%S')
                        values[attribute.attribute_id] = value
                    app = values.get(NotificationAttributeId.APP_IDENTIFIER, '')
                    if app not in names:
                        answer = await client.get_app_attributes(app, [AppAttributeId.DISPLAY_NAME])
                        names[app] = answer[0].value if answer else ''
                except CommandError as error:
                    emit(event='error', message=f'UID {uid}: {error.error_code.name}')
                    continue
                emit(
                    event='added' if notification.event_id == EventId.NOTIFICATION_ADDED else 'modified',
                    uid=uid,
                    category=notification.category_id.name,
                    flags=int(notification.event_flags),
                    app=app,
                    appName=names[app],
                    title=values.get(NotificationAttributeId.TITLE, ''),
                    subtitle=values.get(NotificationAttributeId.SUBTITLE, ''),
                    message=values.get(NotificationAttributeId.MESSAGE, ''),
                    date=values.get(NotificationAttributeId.DATE, ''),
                )
        finally:
            actor.cancel()
    except asyncio.CancelledError:
        raise
    except Exception as error:  # reported, as a watch reports what goes wrong
        emit(event='error', message=f'{type(error).__name__}: {error}')


async def bumble_ancs_accessory(transport_name: str):
    """An ANCS accessory built on Bumble's AncsClient, on the controller at `transport_name`
    (e.g. tcp-client:127.0.0.1:PORT), for `ancs conform accessory --bluetooth ... --spawn`:
    advertises the ANCS solicitation, serves each connection (ancs_accessory_session) until
    it ends, then advertises again. Prints event lines; takes `positive UID`, `negative UID`
    and `quit` on standard input. Runs until quit or killed."""
    loop = asyncio.get_running_loop()
    wearer = asyncio.Queue()
    quit_requested = loop.create_future()

    def read_line():
        line = sys.stdin.readline()
        words = line.split()
        if not line or words == ['quit']:
            loop.remove_reader(sys.stdin.fileno())
            quit_requested.done() or quit_requested.set_result(None)
        elif len(words) == 2 and words[0] in ('positive', 'negative') and words[1].isdigit():
            wearer.put_nowait((words[0], int(words[1])))

    loop.add_reader(sys.stdin.fileno(), read_line)
    async with await open_transport(transport_name) as transport:
        device = Device.with_hci(
            'Bumble ANCS accessory', Address('F0:F1:F2:F3:F4:F6'), transport.source, transport.sink
        )
        use_just_works(device, sc=True)
        await device.power_on()

        async def serve():
            attempt = 0
            while True:
                connection = await advertise_until_connected(device, 'Bumble ANCS accessory', attempt)
                attempt += 1
                emit(event='connected')
                disconnected = loop.create_future()
                connection.on(
                    'disconnection', lambda _: disconnected.done() or disconnected.set_result(None)
                )
                session = asyncio.create_task(ancs_accessory_session(connection, wearer))
                await disconnected
                session.cancel()
                emit(event='disconnected')

        server = asyncio.create_task(serve())
        await quit_requested
        server.cancel()


async def serve_controller(name: str, link: LocalLink):
    """A virtual controller on `link`, served over TCP on a port the OS picks; its port."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(('127.0.0.1', 0))
    listener.listen(1)
    transport = await open_tcp_server_transport_with_socket(listener)
    Controller(name, host_source=transport.source, host_sink=transport.sink, link=link)
    return listener.getsockname()[1]


async def serve_controller_on_pty(name: str, link: LocalLink):
    """A virtual controller on `link`, served as H4 on a pseudo-terminal (Bumble's pty
    transport), as a controller on a serial port would be; the terminal's path."""
    path = os.path.join(tempfile.mkdtemp(prefix='ancs-uart-'), name)
    transport = await open_pty_transport(path)  # a symbolic link to the terminal, removed at exit
    Controller(name, host_source=transport.source, host_sink=transport.sink, link=link)
    return path


async def radio(uart: bool):
    link = LocalLink()
    phone = await serve_controller('phone', link)
    watch = await (serve_controller_on_pty if uart else serve_controller)('watch', link)
    say('ready', phone, watch)
    await asyncio.get_running_loop().create_future()


async def main(role: str, mode: str | None, forget: bool = False, method: str | None = None):
    if role == 'radio':
        await radio(mode == 'uart')
        return
    if role == 'ancs-accessory':
        await bumble_ancs_accessory(mode)
        return
    link = LocalLink()
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(('127.0.0.1', 0))
    listener.listen(1)
    transport = await open_tcp_server_transport_with_socket(listener)
    Controller('swift', host_source=transport.source, host_sink=transport.sink, link=link)
    controller = Controller('bumble', link=link)
    device = Device.with_hci('Bumble', Address('F0:F1:F2:F3:F4:F5'), controller, controller)
    await device.power_on()
    say('ready', listener.getsockname()[1])
    try:
        if role == 'central':
            await bumble_central(device)
        elif role == 'peripheral':
            await bumble_peripheral(device)
        elif role == 'parameters-peripheral':
            await bumble_parameters_peripheral(device)
        elif role == 'ancs-client':
            await bumble_ancs_client(device, int(mode))
        elif role == 'ams-client':
            await bumble_ams_client(device)
        elif role == 'ams-phone':
            await bumble_ams_phone(device)
        elif role == 'mitm-phone' and method == 'keyboard-display':
            use_keyboard_display(device, mode == 'sc')
            await bumble_mitm_phone(device)
        elif role == 'mitm-phone':
            use_mitm(device, mode == 'sc', method == 'numeric')
            await bumble_mitm_phone(device)
        elif role == 'mitm-accessory':
            use_mitm(device, mode == 'sc', method == 'numeric')
            await bumble_mitm_accessory(device)
        elif role == 'pair-peripheral' and method:
            use_mitm(device, mode == 'sc', method == 'numeric')
            await bumble_peripheral(device, connections=1, encrypted=True)
        elif role == 'pair-peripheral':
            use_just_works(device, mode == 'sc')
            await bumble_peripheral(
                device, connections=3 if forget else 2, encrypted=True, forget_before=1 if forget else None
            )
        else:
            await bumble_pairing_central(device, mode == 'sc', forget)
        say('done')
    except Exception as error:  # reported to the Swift test, which fails with it
        say('error', type(error).__name__, error)
    finally:
        await transport.close()


if __name__ == '__main__':
    arguments = sys.argv[1:]
    simple = len(arguments) == 1 and arguments[0] in (
        'central',
        'peripheral',
        'parameters-peripheral',
        'radio',
        'ams-client',
        'ams-phone',
    )
    uart = arguments == ['radio', 'uart']
    pairing = (
        len(arguments) in (2, 3)
        and arguments[0] in ('pair-central', 'pair-peripheral')
        and arguments[1] in ('sc', 'legacy')
        and arguments[2:] in ([], ['forget'])
    )
    mitm = (
        len(arguments) == 3
        and arguments[0] in ('pair-peripheral', 'mitm-accessory', 'mitm-phone')
        and (arguments[1:] in (['sc', 'passkey'], ['legacy', 'passkey'], ['sc', 'numeric']))
    ) or (
        len(arguments) == 3
        and arguments[0] == 'mitm-phone'
        and arguments[1] in ('sc', 'legacy')
        and arguments[2] == 'keyboard-display'
    )
    ancs_client = len(arguments) == 2 and arguments[0] == 'ancs-client' and arguments[1].isdigit()
    accessory = len(arguments) == 2 and arguments[0] == 'ancs-accessory'
    if not (simple or uart or pairing or mitm or ancs_client or accessory):
        sys.exit(
            'usage: bumble_peer.py central|peripheral|parameters-peripheral|radio [uart]'
            '|pair-central MODE [forget]|pair-peripheral MODE [forget|passkey|numeric]'
            '|mitm-accessory MODE passkey|numeric|mitm-phone MODE passkey|numeric|keyboard-display'
            '|ancs-client COUNT|ams-client|ams-phone|ancs-accessory TRANSPORT'
        )
    asyncio.run(
        main(
            arguments[0],
            arguments[1] if len(arguments) >= 2 else None,
            arguments[2:] == ['forget'],
            arguments[2] if mitm else None,
        )
    )
