-- ancs-sim's Wireshark dissector for Apple's Notification Center Service (ANCS) and Apple
-- Media Service (AMS), from the project's protocol pages (Protocol/ANCS.md, Protocol/AMS.md).
-- A post-dissector: Wireshark's own ATT dissector finds each characteristic's UUID from the
-- discovery in the capture (btatt.uuid128); this decodes the values of ANCS's and AMS's
-- characteristics, and reassembles Data Source answers across notifications.
--
-- Use: tshark -X lua_script:Wireshark/ancs.lua -r CAPTURE -Y ancs
-- or copy this file to ~/.local/lib/wireshark/plugins/ (README.md, Reading a field capture).

local ancs = Proto("ancs", "Apple Notification Center Service")
local ams = Proto("apple_ams", "Apple Media Service")

local NOTIFICATION_SOURCE = "9fbf120d630142d98c5825e699a21dbd"
local CONTROL_POINT = "69d1d8f345e149a898219bbdfdaad9d9"
local DATA_SOURCE = "22eac6e924d64bb5be44b36ace7c7bfb"
local REMOTE_COMMAND = "9b3c81d857b14a8ab8df0e56f7ca51c2"
local ENTITY_UPDATE = "2f7cabce808d411f9a0cbb92ba96c102"
local ENTITY_ATTRIBUTE = "c6b2f38c23ab46d8a6aba3a870bbd5d7"

local events = { [0] = "Added", [1] = "Modified", [2] = "Removed" }
local categories = {
  [0] = "Other", [1] = "IncomingCall", [2] = "MissedCall", [3] = "Voicemail", [4] = "Social", [5] = "Schedule",
  [6] = "Email", [7] = "News", [8] = "HealthAndFitness", [9] = "BusinessAndFinance", [10] = "Location",
  [11] = "Entertainment",
}
local commands = { [0] = "GetNotificationAttributes", [1] = "GetAppAttributes", [2] = "PerformNotificationAction" }
local attributes = {
  [0] = "AppIdentifier", [1] = "Title", [2] = "Subtitle", [3] = "Message", [4] = "MessageSize", [5] = "Date",
  [6] = "PositiveActionLabel", [7] = "NegativeActionLabel",
}
local actions = { [0] = "Positive", [1] = "Negative" }
local remote_commands = {
  [0] = "Play", [1] = "Pause", [2] = "TogglePlayPause", [3] = "NextTrack", [4] = "PreviousTrack", [5] = "VolumeUp",
  [6] = "VolumeDown", [7] = "AdvanceRepeatMode", [8] = "AdvanceShuffleMode", [9] = "SkipForward",
  [10] = "SkipBackward", [11] = "LikeTrack", [12] = "DislikeTrack", [13] = "BookmarkTrack",
}
local entities = { [0] = "Player", [1] = "Queue", [2] = "Track" }

local f = ancs.fields
f.event = ProtoField.uint8("ancs.event", "EventID", base.DEC, events)
f.flags = ProtoField.uint8("ancs.flags", "EventFlags", base.HEX)
f.category = ProtoField.uint8("ancs.category", "CategoryID", base.DEC, categories)
f.count = ProtoField.uint8("ancs.count", "CategoryCount", base.DEC)
f.uid = ProtoField.uint32("ancs.uid", "NotificationUID", base.DEC)
f.command = ProtoField.uint8("ancs.command", "CommandID", base.DEC, commands)
f.attribute = ProtoField.uint8("ancs.attribute", "AttributeID", base.DEC, attributes)
f.max_length = ProtoField.uint16("ancs.max_length", "Max length", base.DEC)
f.action = ProtoField.uint8("ancs.action", "ActionID", base.DEC, actions)
f.app = ProtoField.string("ancs.app", "AppIdentifier")
f.title = ProtoField.string("ancs.title", "Title")
f.subtitle = ProtoField.string("ancs.subtitle", "Subtitle")
f.message = ProtoField.string("ancs.message", "Message")
f.message_size = ProtoField.string("ancs.message_size", "MessageSize")
f.date = ProtoField.string("ancs.date", "Date")
f.positive_label = ProtoField.string("ancs.positive_label", "PositiveActionLabel")
f.negative_label = ProtoField.string("ancs.negative_label", "NegativeActionLabel")
f.app_name = ProtoField.string("ancs.app_name", "DisplayName")
f.fragments = ProtoField.uint16("ancs.fragments", "Data Source notifications", base.DEC)
f.reassembled_in = ProtoField.framenum("ancs.reassembled_in", "Reassembled in")

local g = ams.fields
g.command = ProtoField.uint8("apple_ams.command", "RemoteCommandID", base.DEC, remote_commands)
g.entity = ProtoField.uint8("apple_ams.entity", "EntityID", base.DEC, entities)
g.attribute = ProtoField.uint8("apple_ams.attribute", "AttributeID", base.DEC)
g.truncated = ProtoField.bool("apple_ams.truncated", "Truncated")
g.value = ProtoField.string("apple_ams.value", "Value")

local string_fields = {
  [0] = f.app, [1] = f.title, [2] = f.subtitle, [3] = f.message, [4] = f.message_size, [5] = f.date,
  [6] = f.positive_label, [7] = f.negative_label,
}

local att_opcode = Field.new("btatt.opcode")
local att_uuid = Field.new("btatt.uuid128")
local att_value = Field.new("btatt.value")

-- Data Source reassembly, done once on the first pass and kept by frame number.
local requested = nil      -- the attributes the last Get Notification Attributes asked for
local app_request = false  -- whether the last command was Get App Attributes
local buffer = ""          -- the answer so far, as a Lua string of bytes
local buffer_frames = 0
local answers = {}         -- frame number -> the answer completed in it
local parts = {}           -- frame number -> the frame that completes its answer

local function byte_string(range)
  return range:bytes():raw()
end

local function u16(bytes, at)
  return bytes:byte(at) + bytes:byte(at + 1) * 256
end

local function u32(bytes, at)
  return u16(bytes, at) + u16(bytes, at + 2) * 65536
end

-- Parses an answer held whole in `bytes` (1-based); nil while incomplete.
local function parse_answer(bytes)
  if #bytes < 1 then return nil end
  local command = bytes:byte(1)
  local at, result
  if command == 0 then
    if #bytes < 5 or requested == nil then return nil end
    result = { command = 0, uid = u32(bytes, 2), tuples = {} }
    at = 6
    local want = {}
    for _, id in ipairs(requested) do want[id] = true end
    local seen = 0
    while at + 2 <= #bytes do
      local id, length = bytes:byte(at), u16(bytes, at + 1)
      if at + 2 + length > #bytes then return nil end
      result.tuples[#result.tuples + 1] = { id = id, value = bytes:sub(at + 3, at + 2 + length) }
      if want[id] then seen = seen + 1 end
      at = at + 3 + length
    end
    if at <= #bytes or seen < #requested then return nil end
    return result
  elseif command == 1 then
    local nul = bytes:find("\0", 2, true)
    if nul == nil or nul + 3 > #bytes then return nil end
    result = { command = 1, app = bytes:sub(2, nul - 1), tuples = {} }
    at = nul + 1
    while at + 2 <= #bytes do
      local id, length = bytes:byte(at), u16(bytes, at + 1)
      if at + 2 + length > #bytes then return nil end
      result.tuples[#result.tuples + 1] = { id = id, value = bytes:sub(at + 3, at + 2 + length) }
      at = at + 3 + length
    end
    if at <= #bytes then return nil end
    return result
  end
  return nil
end

local function control_point(range, pinfo, tree)
  local bytes = byte_string(range)
  local command = bytes:byte(1)
  tree:add(f.command, range(0, 1))
  if command == 0 and #bytes >= 5 then
    tree:add_le(f.uid, range(1, 4))
    local ids, at = {}, 6
    while at <= #bytes do
      local id = bytes:byte(at)
      ids[#ids + 1] = id
      tree:add(f.attribute, range(at - 1, 1))
      if (id == 1 or id == 2 or id == 3) and at + 2 <= #bytes then
        tree:add_le(f.max_length, range(at, 2))
        at = at + 3
      else
        at = at + 1
      end
    end
    if not pinfo.visited then
      requested, app_request, buffer, buffer_frames = ids, false, "", 0
    end
    pinfo.cols.info:append(" [ANCS fetch UID " .. u32(bytes, 2) .. "]")
  elseif command == 1 then
    local nul = bytes:find("\0", 2, true)
    if nul then tree:add(f.app, range(1, nul - 2)) end
    if not pinfo.visited then
      requested, app_request, buffer, buffer_frames = nil, true, "", 0
    end
  elseif command == 2 and #bytes >= 6 then
    tree:add_le(f.uid, range(1, 4))
    tree:add(f.action, range(5, 1))
    pinfo.cols.info:append(" [ANCS " .. (actions[bytes:byte(6)] or "?") .. " action]")
  end
end

local function data_source(range, pinfo, tree)
  if not pinfo.visited then
    buffer = buffer .. byte_string(range)
    buffer_frames = buffer_frames + 1
    local answer = parse_answer(buffer)
    if answer then
      answer.fragments = buffer_frames
      answers[pinfo.number] = answer
      buffer, buffer_frames = "", 0
    end
  end
  local answer = answers[pinfo.number]
  if answer == nil then
    tree:append_text(" (part of an answer)")
    return
  end
  tree:add(f.fragments, answer.fragments):set_generated()
  if answer.command == 0 then
    tree:add(f.uid, answer.uid):set_generated()
    for _, tuple in ipairs(answer.tuples) do
      local field = string_fields[tuple.id]
      if field then tree:add(field, tuple.value):set_generated() end
    end
    pinfo.cols.info:append(" [ANCS answer UID " .. answer.uid .. "]")
  else
    tree:add(f.app, answer.app):set_generated()
    for _, tuple in ipairs(answer.tuples) do
      if tuple.id == 0 then tree:add(f.app_name, tuple.value):set_generated() end
    end
  end
end

local function notification_source(range, pinfo, tree)
  if range:len() ~= 8 then
    tree:append_text(" (not 8 bytes)")
    return
  end
  tree:add(f.event, range(0, 1))
  tree:add(f.flags, range(1, 1))
  tree:add(f.category, range(2, 1))
  tree:add(f.count, range(3, 1))
  tree:add_le(f.uid, range(4, 4))
  pinfo.cols.info:append(" [ANCS " .. (events[range(0, 1):uint()] or "?") .. " UID " .. range(4, 4):le_uint() .. "]")
end

local function media(uuid, opcode, range, pinfo, tree)
  local length = range:len()
  if uuid == REMOTE_COMMAND then
    if opcode == 0x1b then
      for i = 0, length - 1 do tree:add(g.command, range(i, 1)) end
    elseif length >= 1 then
      tree:add(g.command, range(0, 1))
      pinfo.cols.info:append(" [AMS " .. (remote_commands[range(0, 1):uint()] or "?") .. "]")
    end
  elseif uuid == ENTITY_UPDATE then
    if opcode == 0x1b and length >= 3 then
      tree:add(g.entity, range(0, 1))
      tree:add(g.attribute, range(1, 1))
      tree:add(g.truncated, range(2, 1):uint() % 2 == 1):set_generated()
      tree:add(g.value, length > 3 and range(3, length - 3):string(ENC_UTF_8) or "")
    elseif length >= 1 then
      tree:add(g.entity, range(0, 1))
      for i = 1, length - 1 do tree:add(g.attribute, range(i, 1)) end
    end
  elseif uuid == ENTITY_ATTRIBUTE and opcode ~= 0x0b and length >= 2 then
    tree:add(g.entity, range(0, 1))
    tree:add(g.attribute, range(1, 1))
  end
end

function ancs.dissector(tvb, pinfo, root)
  local opcode_field, uuid_field, value_field = att_opcode(), att_uuid(), att_value()
  if opcode_field == nil or uuid_field == nil or value_field == nil then return end
  local opcode = opcode_field.value
  -- Notifications, Write Requests and Write Commands carry the values this decodes.
  if opcode ~= 0x1b and opcode ~= 0x12 and opcode ~= 0x52 then return end
  local uuid = tostring(uuid_field):lower():gsub("[^0-9a-f]", "")
  local range = value_field.range
  if uuid == NOTIFICATION_SOURCE and opcode == 0x1b then
    notification_source(range, pinfo, root:add(ancs, range, "ANCS Notification Source"))
  elseif uuid == CONTROL_POINT and opcode ~= 0x1b and range:len() >= 1 then
    control_point(range, pinfo, root:add(ancs, range, "ANCS Control Point"))
  elseif uuid == DATA_SOURCE and opcode == 0x1b then
    data_source(range, pinfo, root:add(ancs, range, "ANCS Data Source"))
  elseif uuid == REMOTE_COMMAND or uuid == ENTITY_UPDATE or uuid == ENTITY_ATTRIBUTE then
    media(uuid, opcode, range, pinfo, root:add(ams, range, "AMS"))
  end
end

register_postdissector(ancs)
