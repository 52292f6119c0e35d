/* A consumer node in C: raw_node.py's effect mode (on each delivery, the sink's effect, then the acknowledgement
 * with its value) at the least cost a node can have, so that a benchmark sees lethe's share of a turn and little
 * else (scripts/bench-external --nodes). With the argument "plain" it is a plain Maelstrom node (no lethe_turns)
 * that waits for each line in poll() with an hour's timeout: built static (cc -static), a node whose wall-clock
 * timer no preloaded library can serve, as a Go node's (the engine's tests).
 *
 * It reads lethe's lines, not JSON in general: it relies on what lethe writes (one object a line, the envelope's
 * "turn" its last key named so, scalar values in a delivery's body) and would misread anything else.
 * Build: cc -O2 -o effect_node effect_node.c */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kMaxValue = 256, kSlots = 4096 };

/* The raw JSON text of the scalar after "key": in `from`, into `out`; 0 when absent. */
static int value_of(const char* from, const char* key, char* out) {
  char pattern[64];
  snprintf(pattern, sizeof pattern, "\"%s\":", key);
  const char* at = strstr(from, pattern);
  if (at == NULL) return 0;
  at += strlen(pattern);
  size_t n = 0;
  int quoted = 0;
  for (; at[n] != '\0' && n + 1 < kMaxValue; ++n) {
    if (at[n] == '"' && (n == 0 || at[n - 1] != '\\')) quoted = !quoted;
    if (!quoted && (at[n] == ',' || at[n] == '}')) break;
  }
  memcpy(out, at, n);
  out[n] = '\0';
  return 1;
}

static long last_turn(const char* line) {
  const char* at = NULL;
  for (const char* p = strstr(line, "\"turn\":"); p != NULL; p = strstr(p + 1, "\"turn\":")) at = p;
  return at == NULL ? -1 : strtol(at + 7, NULL, 10);
}

int main(int argc, char** argv) {
  const int plain = argc > 1 && strcmp(argv[1], "plain") == 0;
  if (plain) setvbuf(stdin, NULL, _IONBF, 0); /* what poll() sees unread is all there is */
  static char line[1 << 20];
  static char waiting[kSlots][kMaxValue]; /* request msg_id % kSlots -> the delivery's msg_id */
  char node[kMaxValue] = "\"?\"", type[kMaxValue], id[kMaxValue], message[kMaxValue], processor[kMaxValue],
       attempt[kMaxValue], reply_to[kMaxValue], value[kMaxValue];
  long next_id = 1000;
  for (;;) {
    struct pollfd input = {0, POLLIN, 0};
    if (plain && poll(&input, 1, 3600 * 1000) == 0) continue;
    if (fgets(line, sizeof line, stdin) == NULL) break;
    if (!value_of(line, "type", type)) return 1;
    if (strcmp(type, "\"init\"") == 0) {
      value_of(line, "node_id", node);
      value_of(line, "msg_id", id);
      printf("{\"src\":%s,\"dest\":\"lethe\",\"body\":{\"type\":\"init_ok\",\"in_reply_to\":%s%s}}\n", node,
             id, plain ? "" : ",\"lethe_turns\":true");
    } else if (strcmp(type, "\"deliver\"") == 0) {
      value_of(line, "msg_id", id);
      value_of(line, "message", message);
      value_of(line, "processor", processor);
      value_of(line, "attempt", attempt);
      ++next_id;
      strcpy(waiting[next_id % kSlots], id);
      printf("{\"src\":%s,\"dest\":\"sink\",\"body\":{\"type\":\"effect\",\"message\":%s,\"processor\":%s,"
             "\"attempt\":%s,\"msg_id\":%ld}}\n",
             node, message, processor, attempt, next_id);
    } else if (value_of(line, "in_reply_to", reply_to)) {
      if (!value_of(line, "value", value)) strcpy(value, "null");
      printf("{\"src\":%s,\"dest\":\"source\",\"body\":{\"type\":\"deliver_ok\",\"in_reply_to\":%s,\"value\":%s}}\n",
             node, waiting[strtol(reply_to, NULL, 10) % kSlots], value);
    }
    if (!plain) {
      printf("{\"src\":%s,\"dest\":\"lethe\",\"body\":{\"type\":\"turn_end\",\"turn\":%ld}}\n", node, last_turn(line));
    }
    fflush(stdout);
  }
  return 0;
}
