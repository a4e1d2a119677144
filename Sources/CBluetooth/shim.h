// BlueZ's libbluetooth (Debian's libbluetooth-dev) for Swift: the AF_BLUETOOTH socket
// structures (sockaddr_hci for the HCI user channel, sockaddr_l2 and bt_security for the
// kernel's LE L2CAP sockets) and hci_lib's raw-socket helpers (hci_open_dev, hci_send_req,
// hci_devba, hci_devinfo) used by the HCI target's hci-user and l2cap transports.
#ifndef ANCS_CBLUETOOTH_SHIM_H
#define ANCS_CBLUETOOTH_SHIM_H

#include <sys/socket.h>
#include <bluetooth/bluetooth.h>
#include <bluetooth/hci.h>
#include <bluetooth/hci_lib.h>
#include <bluetooth/l2cap.h>

#endif
