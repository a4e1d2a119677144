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
"""

import asyncio
import socket
import sys

from bumble.controller import Controller
from bumble.core import UUID
from bumble.device import Device, Peer
from bumble.gatt import Characteristic, Service
from bumble.hci import Address
from bumble.link import LocalLink
from bumble.transport.tcp_server import open_tcp_server_transport_with_socket

ANCS = UUID('7905F431-B5CE-4E99-A40F-4B1E122D00D0')
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


async def bumble_central(device: Device):
    """Scan for a device soliciting ANCS, connect, and use its GATT server."""
    loop = asyncio.get_running_loop()
    found = loop.create_future()

    def on_advertisement(advertisement):
        data = bytes(advertisement.data)
        if solicits_ancs(data) and not found.done():
            found.set_result((advertisement.address, local_name(data)))

    device.on('advertisement', on_advertisement)
    await device.start_scanning(filter_duplicates=True)
    address, name = await found
    await device.stop_scanning()
    say('found', address, name)
    connection = await device.connect(address)
    say('connected', connection.handle)
    disconnected = loop.create_future()
    connection.on('disconnection', lambda reason: disconnected.set_result(reason))
    peer = Peer(connection)
    mtu = await peer.request_mtu(185)
    say('mtu', mtu)
    services = await peer.discover_service(ANCS)
    if not services:
        raise RuntimeError('no ANCS service found')
    characteristics = await peer.discover_characteristics(service=services[0])
    say('characteristics', len(characteristics))
    value = await peer.read_value(characteristics[0])
    say('read', value.decode())
    await connection.disconnect()
    say('disconnected', await disconnected)


async def bumble_peripheral(device: Device):
    """Advertise the ANCS solicitation with a name, serve a small service, await the host."""
    loop = asyncio.get_running_loop()
    device.add_service(
        Service(
            TEST_SERVICE,
            [
                Characteristic(
                    TEST_CHARACTERISTIC,
                    Characteristic.Properties.READ,
                    Characteristic.READABLE,
                    TEST_VALUE,
                )
            ],
        )
    )
    name = b'Bumble watch'
    data = (
        bytes([2, 0x01, 0x06])
        + bytes([17, AD_SOLICITATION_128])
        + bytes(ANCS)
        + bytes([len(name) + 1, AD_COMPLETE_NAME])
        + name
    )
    connected = loop.create_future()
    device.on('connection', lambda connection: connected.done() or connected.set_result(connection))
    await device.start_advertising(
        advertising_data=data, advertising_interval_min=20, advertising_interval_max=20
    )
    say('advertising')
    connection = await connected
    say('connected', connection.peer_address)
    disconnected = loop.create_future()
    connection.on('disconnection', lambda reason: disconnected.set_result(reason))
    say('disconnected', await disconnected)


async def main(role: str):
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
        else:
            await bumble_peripheral(device)
        say('done')
    except Exception as error:  # reported to the Swift test, which fails with it
        say('error', type(error).__name__, error)
    finally:
        transport.close()


if __name__ == '__main__':
    if len(sys.argv) != 2 or sys.argv[1] not in ('central', 'peripheral'):
        sys.exit('usage: bumble_peer.py central|peripheral')
    asyncio.run(main(sys.argv[1]))
