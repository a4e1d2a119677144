// OpenSSL's libcrypto (3.0, Debian's libssl-dev) for Swift: AES-128, AES-CMAC and P-256, used
// by the HCI target's SMP cryptographic toolbox. Only non-deprecated 3.0 APIs are used
// (EVP_CIPHER, EVP_MAC, EC_GROUP/EC_POINT, BIGNUM); all import without wrappers.
#ifndef ANCS_COPENSSL_SHIM_H
#define ANCS_COPENSSL_SHIM_H

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/obj_mac.h>
#include <openssl/params.h>

#endif
