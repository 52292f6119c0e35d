// protocol/key_text.hpp — a store key for people, as the checker's texts and pages name it.
#pragma once

#include <string>

#include "protocol/store_ops.hpp"

namespace lethe {

// "message 14", "message 14 of processor 2", "inbox message 14": make_key's layout read back; a key whose table
// byte is none of make_key's tables in hex ("0x2a"), so any 64-bit key has a name.
std::string key_text(Key key);

}  // namespace lethe
