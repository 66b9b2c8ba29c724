/* Reads a procfs/sysfs text file and picks numbers out of it by whitespace-token position, in one call.

   The agent re-reads the same kernel files ten times a second. Their layout (which token holds which value) is
   learnt once in Python; this module then does the per-tick work: pread the file into a reusable buffer, walk its
   tokens, convert the wanted ones to doubles straight into a float64 array, and fingerprint the label tokens so the
   caller can tell whether the learnt layout still holds. Anything unexpected (a token that is not a number, a file
   that outgrew the buffer, fewer tokens than wanted) is reported with ok = 0 and the caller parses the bytes in
   Python instead, so this module never decides what a malformed line means.

   Token splitting follows Python's bytes.split() (ASCII whitespace); numbers convert as Python's float() does for
   the forms the kernel writes (decimal integers, decimal fractions, hexadecimal counters when base is 16). */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ASCII whitespace as bytes.split() sees it, looked up rather than compared six times: a tick's files are mostly
   padding and digits, and the scan walks every byte of them. */
static const unsigned char SPACE[256] = {['\t'] = 1, ['\n'] = 1, ['\v'] = 1, ['\f'] = 1, ['\r'] = 1, [' '] = 1};

static inline uint64_t fnv1a(uint64_t hash, const unsigned char *bytes, Py_ssize_t length) {
    for (Py_ssize_t i = 0; i < length; i++) {
        hash ^= bytes[i];
        hash *= 1099511628211ULL;
    }
    return hash;
}

/* Converts one token; returns 0 when it is not a number this module converts exactly as float() would. */
static int token_to_double(const unsigned char *token, Py_ssize_t length, int base, double *value) {
    if (length <= 0) return 0;
    if (base == 16) {
        if (length > 16) return 0;
        uint64_t number = 0;
        for (Py_ssize_t i = 0; i < length; i++) {
            unsigned char c = token[i];
            unsigned digit;
            if (c >= '0' && c <= '9') digit = c - '0';
            else if (c >= 'a' && c <= 'f') digit = c - 'a' + 10;
            else if (c >= 'A' && c <= 'F') digit = c - 'A' + 10;
            else return 0;
            number = (number << 4) | digit;
        }
        *value = (double)number;
        return 1;
    }
    Py_ssize_t start = (token[0] == '-' || token[0] == '+') ? 1 : 0;
    if (start == length) return 0;
    int only_digits = length - start <= 19;
    for (Py_ssize_t i = start; i < length && only_digits; i++) only_digits = token[i] >= '0' && token[i] <= '9';
    if (only_digits) {  /* below 10^19: exact in uint64, and the conversion to double rounds correctly */
        uint64_t number = 0;
        for (Py_ssize_t i = start; i < length; i++) number = number * 10 + (token[i] - '0');
        *value = token[0] == '-' ? -(double)number : (double)number;
        return 1;
    }
    for (Py_ssize_t i = start; i < length; i++) {  /* fractions and exponents: strtod, digits and signs only */
        unsigned char c = token[i];
        if (!((c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '-' || c == '+')) return 0;
    }
    char text[64];
    if (length >= (Py_ssize_t)sizeof(text)) return 0;
    memcpy(text, token, length);
    text[length] = '\0';
    char *end = NULL;
    errno = 0;
    double number = strtod(text, &end);
    if (end != text + length || errno == ERANGE || !isfinite(number)) return 0;
    *value = number;
    return 1;
}

typedef struct {
    const int32_t *wanted, *slots;
    const double *scales;  /* NULL when every scale is 1 */
    const int32_t *labels;
    Py_ssize_t wanted_count, label_count;
    int base;
    const unsigned char *adds;  /* NULL, or per wanted token: 1 adds it to its slot (zeroed first), 0 sets it */
} Layout;

/* Walks the tokens of text: wanted ones go to out[slots[i]] (times scales[i]), label ones into *hash; returns ok
   (0 when it was 0 on entry, a wanted token is missing, or one is not a number) and counts the tokens. */
static int scan_text(const unsigned char *text, Py_ssize_t length, const Layout *layout, double *out, int ok,
                     Py_ssize_t *tokens, uint64_t *hash_out) {
    uint64_t hash = 14695981039346656037ULL;
    Py_ssize_t token = 0, next_wanted = 0, next_label = 0, at = 0;
    for (Py_ssize_t i = 0; layout->adds != NULL && i < layout->wanted_count; i++)
        if (layout->adds[i]) out[layout->slots[i]] = 0.0;
    while (at < length) {
        while (at < length && SPACE[text[at]]) at++;
        if (at == length) break;
        Py_ssize_t start = at;
        while (at < length && !SPACE[text[at]]) at++;
        while (next_label < layout->label_count && layout->labels[next_label] == token) {
            hash = fnv1a(hash, text + start, at - start);
            hash = fnv1a(hash, (const unsigned char *)"\x1f", 1);
            next_label++;
        }
        while (next_wanted < layout->wanted_count && layout->wanted[next_wanted] == token) {
            double value;
            if (ok && token_to_double(text + start, at - start, layout->base, &value)) {
                if (layout->scales != NULL) value *= layout->scales[next_wanted];
                if (layout->adds != NULL && layout->adds[next_wanted])
                    out[layout->slots[next_wanted]] += value;
                else
                    out[layout->slots[next_wanted]] = value;
            } else
                ok = 0;
            next_wanted++;
        }
        token++;
    }
    *tokens = token;
    *hash_out = hash;
    return ok && next_wanted == layout->wanted_count;
}

typedef struct {
    Py_buffer data, wanted, slots, out, scales, labels, adds;
} Buffers;

static void release(Buffers *b) {
    Py_buffer *all[] = {&b->data, &b->wanted, &b->slots, &b->out, &b->scales, &b->labels, &b->adds};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        if (all[i]->obj != NULL) PyBuffer_Release(all[i]);
}

static int check_itemsize(Py_buffer *buffer, Py_ssize_t itemsize, const char *what) {
    if (buffer->obj != NULL && buffer->len % itemsize != 0) {
        PyErr_Format(PyExc_ValueError, "%s must hold %zd-byte items", what, itemsize);
        return 0;
    }
    return 1;
}

PyDoc_STRVAR(scan_doc,
"scan(fd, buffer, length, wanted, slots, out, scales, labels, base, adds=None) -> (length, tokens, label_hash, ok)\n\n"
"With fd >= 0, pread the file from offset 0 into the writable buffer; otherwise use its first length bytes.\n"
"wanted (int32, ascending) are token positions whose numbers go to out[slots[i]] (float64), times scales[i]\n"
"when scales (float64) is not None; labels (int32, ascending) are token positions fingerprinted into label_hash.\n"
"adds (uint8, one per wanted token) when not None: a token marked 1 is added to its slot, zeroed first.\n"
"ok is 0 when the buffer was filled (the file may be longer), a wanted token is missing, or one is not a number.");

static PyObject *scan(PyObject *module, PyObject *args) {
    int fd, base;
    Py_ssize_t length;
    PyObject *scales_object, *adds_object = Py_None;
    Buffers b;
    memset(&b, 0, sizeof(b));
    if (!PyArg_ParseTuple(args, "iw*ny*y*w*Oy*i|O", &fd, &b.data, &length, &b.wanted, &b.slots, &b.out,
                          &scales_object, &b.labels, &base, &adds_object))
        return NULL;
    if ((scales_object != Py_None && PyObject_GetBuffer(scales_object, &b.scales, PyBUF_SIMPLE) < 0) ||
        (adds_object != Py_None && PyObject_GetBuffer(adds_object, &b.adds, PyBUF_SIMPLE) < 0)) {
        release(&b);
        return NULL;
    }
    if (!check_itemsize(&b.wanted, 4, "wanted") || !check_itemsize(&b.slots, 4, "slots") ||
        !check_itemsize(&b.out, 8, "out") || !check_itemsize(&b.scales, 8, "scales") ||
        !check_itemsize(&b.labels, 4, "labels")) {
        release(&b);
        return NULL;
    }
    Py_ssize_t wanted_count = b.wanted.len / 4, label_count = b.labels.len / 4, out_count = b.out.len / 8;
    if (b.slots.len / 4 != wanted_count || (b.scales.obj != NULL && b.scales.len / 8 != wanted_count) ||
        (b.adds.obj != NULL && b.adds.len != wanted_count)) {
        release(&b);
        PyErr_SetString(PyExc_ValueError, "wanted, slots, scales and adds must have the same length");
        return NULL;
    }
    const int32_t *wanted = b.wanted.buf, *slots = b.slots.buf, *labels = b.labels.buf;
    for (Py_ssize_t i = 0; i < wanted_count; i++)
        if (slots[i] < 0 || slots[i] >= out_count) {
            release(&b);
            PyErr_SetString(PyExc_IndexError, "a slot lies outside out");
            return NULL;
        }
    unsigned char *text = b.data.buf;
    if (fd >= 0) {
        ssize_t got;
        Py_BEGIN_ALLOW_THREADS
        got = pread(fd, text, (size_t)b.data.len, 0);
        Py_END_ALLOW_THREADS
        if (got < 0) {
            release(&b);
            return PyErr_SetFromErrno(PyExc_OSError);
        }
        length = got;
    } else if (length < 0 || length > b.data.len) {
        release(&b);
        PyErr_SetString(PyExc_ValueError, "length lies outside the buffer");
        return NULL;
    }
    Layout layout = {wanted, slots, b.scales.obj != NULL ? b.scales.buf : NULL, labels, wanted_count, label_count,
                     base, b.adds.obj != NULL ? b.adds.buf : NULL};
    Py_ssize_t tokens;
    uint64_t hash;
    int ok = scan_text(text, length, &layout, b.out.buf, fd < 0 || length < b.data.len, &tokens, &hash);
    release(&b);
    return Py_BuildValue("nnKi", length, tokens, (unsigned long long)hash, ok);
}

/* ---- ScanBatch: every scanned file of the agent read in one call per tick, straight into the frame ---- */

typedef struct {
    int fd, every;
    Layout layout;  /* its arrays live in owned, one allocation */
    void *owned;
    unsigned char *buffer;
    Py_ssize_t capacity, length, offset, span, tokens;
    uint64_t label_hash;
    int64_t budget_ns, spent_ns;
    long long reads;
    int overruns, failed;
} Entry;

typedef struct {
    PyObject_HEAD
    Entry *entries;
    Py_ssize_t count, allocated;
    int overruns_before_slow;
} ScanBatch;

static void entry_free(Entry *entry) {
    free(entry->owned);
    free(entry->buffer);
    memset(entry, 0, sizeof(*entry));
    entry->every = 0;
}

static void batch_dealloc(ScanBatch *self) {
    for (Py_ssize_t i = 0; i < self->count; i++) entry_free(&self->entries[i]);
    free(self->entries);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int batch_init(ScanBatch *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"overruns_before_slow", NULL};
    self->overruns_before_slow = 3;
    return PyArg_ParseTupleAndKeywords(args, kwargs, "|i", keywords, &self->overruns_before_slow) ? 0 : -1;
}

static int64_t monotonic_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000000000LL + now.tv_nsec;
}

static Entry *entry_at(ScanBatch *self, Py_ssize_t index) {
    if (index < 0 || index >= self->count) {
        PyErr_SetString(PyExc_IndexError, "no such entry in the batch");
        return NULL;
    }
    return &self->entries[index];
}

/* Makes room for one more entry; 0 when memory ran out (the entries are kept). */
static int batch_room_for_one(ScanBatch *self) {
    if (self->count < self->allocated) return 1;
    Py_ssize_t allocated = 2 * self->allocated + 8;
    Entry *grown = realloc(self->entries, sizeof(Entry) * (size_t)allocated);
    if (grown == NULL) return 0;
    self->entries = grown;
    self->allocated = allocated;
    return 1;
}

PyDoc_STRVAR(batch_put_doc,
"put(index, fd, read_size, wanted, slots, scales, labels, base, tokens, label_hash, offset, every, budget_ns,\n"
"    adds=None)\n\n"
"Sets entry index (index == len(batch) appends one): the file fd, read read_size bytes at a time, scanned as scan()\n"
"does, its values landing at frame[offset + slots[i]] when the file still has `tokens` tokens and its labels hash\n"
"to label_hash; read at ticks divisible by every (0: never), a read over budget_ns counting as an overrun.");

static PyObject *batch_put(ScanBatch *self, PyObject *args) {
    Py_ssize_t index, read_size, tokens, offset;
    int fd, base, every;
    unsigned long long label_hash;
    long long budget_ns;
    PyObject *scales_object, *adds_object = Py_None;
    Buffers b;
    memset(&b, 0, sizeof(b));
    if (!PyArg_ParseTuple(args, "niny*y*Oy*inKniL|O", &index, &fd, &read_size, &b.wanted, &b.slots, &scales_object,
                          &b.labels, &base, &tokens, &label_hash, &offset, &every, &budget_ns, &adds_object))
        return NULL;
    if ((scales_object != Py_None && PyObject_GetBuffer(scales_object, &b.scales, PyBUF_SIMPLE) < 0) ||
        (adds_object != Py_None && PyObject_GetBuffer(adds_object, &b.adds, PyBUF_SIMPLE) < 0)) {
        release(&b);
        return NULL;
    }
    Py_ssize_t wanted_count = b.wanted.len / 4, label_count = b.labels.len / 4;
    const char *problem = NULL;
    if (!check_itemsize(&b.wanted, 4, "wanted") || !check_itemsize(&b.slots, 4, "slots") ||
        !check_itemsize(&b.scales, 8, "scales") || !check_itemsize(&b.labels, 4, "labels")) {
        release(&b);
        return NULL;
    }
    if (b.slots.len / 4 != wanted_count || (b.scales.obj != NULL && b.scales.len / 8 != wanted_count) ||
        (b.adds.obj != NULL && b.adds.len != wanted_count))
        problem = "wanted, slots, scales and adds must have the same length";
    else if (index < 0 || index > self->count)
        problem = "index must name an entry or the next one";
    else if (read_size < 1 || offset < 0 || every < 0 || tokens < 0)
        problem = "read_size must be positive; offset, every and tokens not negative";
    Py_ssize_t span = 0;
    for (Py_ssize_t i = 0; problem == NULL && i < wanted_count; i++) {
        int32_t slot = ((const int32_t *)b.slots.buf)[i];
        if (slot < 0) problem = "a slot is negative";
        else if (slot + 1 > span) span = slot + 1;
    }
    if (problem != NULL) {
        release(&b);
        PyErr_SetString(PyExc_ValueError, problem);
        return NULL;
    }
    size_t arrays = (size_t)(b.wanted.len + b.slots.len + b.labels.len) + (b.scales.obj != NULL ? b.scales.len : 0) +
                    (b.adds.obj != NULL ? b.adds.len : 0);
    char *owned = malloc(arrays + 8);
    unsigned char *buffer = malloc((size_t)read_size);
    if (owned == NULL || buffer == NULL || (index == self->count && !batch_room_for_one(self))) {
        free(owned);
        free(buffer);
        release(&b);
        return PyErr_NoMemory();
    }
    Entry *entry = &self->entries[index];
    if (index == self->count) {
        memset(entry, 0, sizeof(*entry));
        self->count++;
    } else {
        entry_free(entry);
    }
    char *at = owned;
    double *scales = NULL;
    if (b.scales.obj != NULL) {  /* first, so the doubles are aligned */
        memcpy(at, b.scales.buf, b.scales.len);
        scales = (double *)at;
        at += b.scales.len;
    }
    int32_t *wanted = (int32_t *)at, *slots = (int32_t *)(at + b.wanted.len);
    int32_t *labels = (int32_t *)(at + b.wanted.len + b.slots.len);
    memcpy(wanted, b.wanted.buf, b.wanted.len);
    memcpy(slots, b.slots.buf, b.slots.len);
    memcpy(labels, b.labels.buf, b.labels.len);
    unsigned char *adds = NULL;
    if (b.adds.obj != NULL) {
        adds = (unsigned char *)(at + b.wanted.len + b.slots.len + b.labels.len);
        memcpy(adds, b.adds.buf, b.adds.len);
    }
    Layout layout = {wanted, slots, scales, labels, wanted_count, label_count, base, adds};
    entry->fd = fd;
    entry->every = every;
    entry->layout = layout;
    entry->owned = owned;
    entry->buffer = buffer;
    entry->capacity = read_size;
    entry->offset = offset;
    entry->span = span;
    entry->tokens = tokens;
    entry->label_hash = label_hash;
    entry->budget_ns = budget_ns;
    release(&b);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(batch_read_doc,
"read(tick, frame) -> None or (failed, slow)\n\n"
"Reads every entry due at tick into frame (float64). None when all went well; otherwise the indices of entries\n"
"whose values could not be vouched for (unreadable, changed layout, a value not a number: read them in Python)\n"
"and of entries whose reads ran over budget overruns_before_slow times in a row.");

/* Whether every entry's values lie inside a frame of width doubles; sets IndexError when one does not. */
static int batch_fits(ScanBatch *self, Py_ssize_t width) {
    for (Py_ssize_t i = 0; i < self->count; i++)
        if (self->entries[i].every > 0 && self->entries[i].offset + self->entries[i].span > width) {
            PyErr_SetString(PyExc_IndexError, "an entry's values lie outside the frame");
            return 0;
        }
    return 1;
}

/* Reads every entry due at tick into out (no Python objects touched: callable without the GIL); 1 when an entry
   could not be vouched for or ran over budget too often. */
static int batch_read_due(ScanBatch *self, long long tick, double *out) {
    int trouble = 0;
    for (Py_ssize_t i = 0; i < self->count; i++) {
        Entry *entry = &self->entries[i];
        entry->length = -1;
        entry->failed = 0;
        if (entry->every <= 0 || tick % entry->every != 0) continue;
        int64_t started = monotonic_ns();
        ssize_t got = pread(entry->fd, entry->buffer, (size_t)entry->capacity, 0);
        Py_ssize_t tokens = 0;
        uint64_t hash = 0;
        int ok = got >= 0 && got < entry->capacity;
        if (got >= 0) {
            entry->length = got;
            ok = scan_text(entry->buffer, got, &entry->layout, out + entry->offset, ok, &tokens, &hash) &&
                 tokens == entry->tokens && hash == entry->label_hash;
        }
        int64_t elapsed = monotonic_ns() - started;
        entry->spent_ns += elapsed;
        entry->reads++;
        entry->overruns = elapsed > entry->budget_ns ? entry->overruns + 1 : 0;
        entry->failed = !ok;
        trouble |= entry->failed || entry->overruns >= self->overruns_before_slow;
    }
    return trouble;
}

/* (failed, slow): the entries read at tick that could not be vouched for, and those over budget too often (their
   overrun count starts again). */
static PyObject *batch_trouble(ScanBatch *self, long long tick) {
    PyObject *failed_list = PyList_New(0), *slow_list = PyList_New(0);
    for (Py_ssize_t i = 0; failed_list != NULL && slow_list != NULL && i < self->count; i++) {
        Entry *entry = &self->entries[i];
        if (entry->every <= 0 || tick % entry->every != 0) continue;
        if (entry->failed) {
            PyObject *number = PyLong_FromSsize_t(i);
            if (number == NULL || PyList_Append(failed_list, number) < 0) Py_CLEAR(failed_list);
            Py_XDECREF(number);
        }
        if (entry->overruns >= self->overruns_before_slow) {
            entry->overruns = 0;
            PyObject *number = PyLong_FromSsize_t(i);
            if (number == NULL || slow_list == NULL || PyList_Append(slow_list, number) < 0) Py_CLEAR(slow_list);
            Py_XDECREF(number);
        }
    }
    if (failed_list == NULL || slow_list == NULL) {
        Py_XDECREF(failed_list);
        Py_XDECREF(slow_list);
        return NULL;
    }
    return Py_BuildValue("(NN)", failed_list, slow_list);
}

static PyObject *batch_read(ScanBatch *self, PyObject *args) {
    long long tick;
    Py_buffer frame;
    if (!PyArg_ParseTuple(args, "Lw*", &tick, &frame)) return NULL;
    if (frame.len % 8 != 0) {
        PyBuffer_Release(&frame);
        PyErr_SetString(PyExc_ValueError, "frame must hold 8-byte items");
        return NULL;
    }
    if (!batch_fits(self, frame.len / 8)) {
        PyBuffer_Release(&frame);
        return NULL;
    }
    int trouble;
    Py_BEGIN_ALLOW_THREADS
    trouble = batch_read_due(self, tick, frame.buf);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&frame);
    if (!trouble) Py_RETURN_NONE;
    return batch_trouble(self, tick);
}

PyDoc_STRVAR(batch_read_ticks_doc,
"read_ticks(start_ns, interval_ns, last_tick, end_tick, frames, ticks, wall_ns, lag_ns)\n"
"    -> (rows, trouble, interrupted)\n\n"
"Keeps the agent's schedule in C: tick k is due at start_ns + k * interval_ns (CLOCK_MONOTONIC). From the tick after\n"
"last_tick (or the one now due, when ticks were missed) until end_tick, sleeps until each due time, then reads the\n"
"entries due into the next row of frames (float64, rows x width); a row starts as a copy of the one before, so a\n"
"value not read at its tick holds, and row 0 must hold the current frame. ticks, wall_ns (CLOCK_REALTIME when the\n"
"tick woke) and lag_ns (how late it woke) get one int64 per row. Returns after the first row whose read had\n"
"trouble (as read() reports it, else None), or early with interrupted true when a signal woke the sleep; rows: the\n"
"rows filled. At least one row is filled unless interrupted, even when end_tick has passed.");

static int sleep_until(int64_t due_ns) {
    struct timespec due = {.tv_sec = due_ns / 1000000000LL, .tv_nsec = due_ns % 1000000000LL};
    return clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &due, NULL);
}

static int64_t realtime_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return (int64_t)now.tv_sec * 1000000000LL + now.tv_nsec;
}

enum { TICK_DUE, TICK_PAST_END, TICK_INTERRUPTED };

/* Sleeps until the tick after *tick is due (or the one now due, when ticks were missed), unless that tick is
   end_tick or later and `first` is false; on TICK_DUE, *tick is the tick and *lag_ns how late it woke. */
static int wait_for_tick(int64_t start_ns, int64_t interval_ns, long long end_tick, int first, long long *tick,
                         int64_t *lag_ns) {
    long long due_now = (monotonic_ns() - start_ns) / interval_ns;
    long long next = due_now > *tick + 1 ? due_now : *tick + 1;
    if (!first && next >= end_tick) return TICK_PAST_END;
    int64_t due = start_ns + next * interval_ns;
    if (sleep_until(due) == EINTR) return TICK_INTERRUPTED;
    *lag_ns = monotonic_ns() - due;
    *tick = next;
    return TICK_DUE;
}

static PyObject *batch_read_ticks(ScanBatch *self, PyObject *args) {
    long long start_ns, interval_ns, last_tick, end_tick;
    Py_buffer frames, ticks, walls, lags;
    if (!PyArg_ParseTuple(args, "LLLLw*w*w*w*", &start_ns, &interval_ns, &last_tick, &end_tick, &frames, &ticks,
                          &walls, &lags))
        return NULL;
    Py_ssize_t capacity = ticks.len / 8;
    const char *problem = NULL;
    if (interval_ns <= 0) problem = "interval_ns must be positive";
    else if (ticks.len % 8 || walls.len != ticks.len || lags.len != ticks.len || capacity < 1)
        problem = "ticks, wall_ns and lag_ns must hold the same number (at least one) of int64 items";
    else if (frames.len % (8 * capacity)) problem = "frames must hold as many float64 rows as ticks has items";
    Py_ssize_t width = problem == NULL ? frames.len / 8 / capacity : 0;
    if (problem == NULL && !batch_fits(self, width)) problem = "";
    if (problem != NULL) {
        if (*problem) PyErr_SetString(PyExc_ValueError, problem);
        PyBuffer_Release(&frames);
        PyBuffer_Release(&ticks);
        PyBuffer_Release(&walls);
        PyBuffer_Release(&lags);
        return NULL;
    }
    double *rows_out = frames.buf;
    int64_t *tick_out = ticks.buf, *wall_out = walls.buf, *lag_out = lags.buf;
    Py_ssize_t rows = 0;
    int trouble = 0, interrupted = 0;
    long long tick = last_tick;
    Py_BEGIN_ALLOW_THREADS
    while (rows < capacity) {
        int64_t lag;
        int waited = wait_for_tick(start_ns, interval_ns, end_tick, rows == 0, &tick, &lag);
        if (waited != TICK_DUE) {
            interrupted = waited == TICK_INTERRUPTED;
            break;
        }
        double *row = rows_out + rows * width;
        if (rows > 0) memcpy(row, row - width, (size_t)width * sizeof(double));
        tick_out[rows] = tick;
        wall_out[rows] = realtime_ns();
        lag_out[rows] = lag;
        trouble = batch_read_due(self, tick, row);
        rows++;
        if (trouble) break;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&frames);
    PyBuffer_Release(&ticks);
    PyBuffer_Release(&walls);
    PyBuffer_Release(&lags);
    PyObject *trouble_lists = trouble ? batch_trouble(self, tick) : Py_NewRef(Py_None);
    if (trouble_lists == NULL) return NULL;
    return Py_BuildValue("nNO", rows, trouble_lists, interrupted ? Py_True : Py_False);
}

PyDoc_STRVAR(batch_schedule_doc, "schedule(index, every, budget_ns): read entry index at ticks divisible by every.");

static PyObject *batch_schedule(ScanBatch *self, PyObject *args) {
    Py_ssize_t index;
    int every;
    long long budget_ns;
    if (!PyArg_ParseTuple(args, "niL", &index, &every, &budget_ns)) return NULL;
    Entry *entry = entry_at(self, index);
    if (entry == NULL) return NULL;
    entry->every = every < 0 ? 0 : every;
    entry->budget_ns = budget_ns;
    entry->overruns = 0;
    Py_RETURN_NONE;
}

PyDoc_STRVAR(batch_text_doc,
"text(index) -> bytes or None: the bytes of the entry's last read at this tick, unless they filled its buffer.");

static PyObject *batch_text(ScanBatch *self, PyObject *args) {
    Py_ssize_t index;
    if (!PyArg_ParseTuple(args, "n", &index)) return NULL;
    Entry *entry = entry_at(self, index);
    if (entry == NULL) return NULL;
    if (entry->length < 0 || entry->length >= entry->capacity) Py_RETURN_NONE;
    return PyBytes_FromStringAndSize((const char *)entry->buffer, entry->length);
}

PyDoc_STRVAR(batch_cost_doc, "cost(index) -> (reads, seconds): reads of the entry so far and the time they took.");

static PyObject *batch_cost(ScanBatch *self, PyObject *args) {
    Py_ssize_t index;
    if (!PyArg_ParseTuple(args, "n", &index)) return NULL;
    Entry *entry = entry_at(self, index);
    if (entry == NULL) return NULL;
    return Py_BuildValue("Ld", entry->reads, entry->spent_ns * 1e-9);
}

static PyObject *batch_clear(ScanBatch *self, PyObject *unused) {
    for (Py_ssize_t i = 0; i < self->count; i++) entry_free(&self->entries[i]);
    self->count = 0;
    Py_RETURN_NONE;
}

static Py_ssize_t batch_length(ScanBatch *self) { return self->count; }

static PyMethodDef batch_methods[] = {
    {"put", (PyCFunction)batch_put, METH_VARARGS, batch_put_doc},
    {"read", (PyCFunction)batch_read, METH_VARARGS, batch_read_doc},
    {"read_ticks", (PyCFunction)batch_read_ticks, METH_VARARGS, batch_read_ticks_doc},
    {"schedule", (PyCFunction)batch_schedule, METH_VARARGS, batch_schedule_doc},
    {"text", (PyCFunction)batch_text, METH_VARARGS, batch_text_doc},
    {"cost", (PyCFunction)batch_cost, METH_VARARGS, batch_cost_doc},
    {"clear", (PyCFunction)batch_clear, METH_NOARGS, "clear(): drop every entry."},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods batch_sequence = {.sq_length = (lenfunc)batch_length};

static PyTypeObject ScanBatchType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "producers.fast_read._tokenscan.ScanBatch",
    .tp_doc = PyDoc_STR("Scanned files read together: one call per tick preads and scans every due file into a frame."),
    .tp_basicsize = sizeof(ScanBatch),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)batch_init,
    .tp_dealloc = (destructor)batch_dealloc,
    .tp_methods = batch_methods,
    .tp_as_sequence = &batch_sequence,
};

PyDoc_STRVAR(read_each_doc,
"read_each(fds, buffer) -> bytes read: pread every descriptor of fds (int32) from offset 0 into buffer, nothing\n"
"parsed; what reading the files costs bare (the kernel's share of the agent's work).");

static PyObject *read_each(PyObject *module, PyObject *args) {
    Py_buffer fds, buffer;
    if (!PyArg_ParseTuple(args, "y*w*", &fds, &buffer)) return NULL;
    const int32_t *descriptors = fds.buf;
    long long total = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < fds.len / 4; i++) {
        ssize_t got = pread(descriptors[i], buffer.buf, (size_t)buffer.len, 0);
        if (got > 0) total += got;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&fds);
    PyBuffer_Release(&buffer);
    return PyLong_FromLongLong(total);
}

PyDoc_STRVAR(read_each_on_schedule_doc,
"read_each_on_schedule(fds, everies, buffer, start_ns, interval_ns, last_tick, end_tick) -> last tick\n\n"
"Keeps a schedule as ScanBatch.read_ticks does (the tick after last_tick, or the one now due, until end_tick; at\n"
"least one), and at each tick preads every descriptor of fds (int32) whose entry in everies (int32) divides the\n"
"tick into buffer, nothing parsed: what the agent's schedule and files cost bare. Returns the last tick kept (on a\n"
"signal, the last before it).");

static PyObject *read_each_on_schedule(PyObject *module, PyObject *args) {
    Py_buffer fds, everies, buffer;
    long long start_ns, interval_ns, tick, end_tick;
    if (!PyArg_ParseTuple(args, "y*y*w*LLLL", &fds, &everies, &buffer, &start_ns, &interval_ns, &tick, &end_tick))
        return NULL;
    if (everies.len != fds.len || interval_ns <= 0) {
        PyBuffer_Release(&fds);
        PyBuffer_Release(&everies);
        PyBuffer_Release(&buffer);
        PyErr_SetString(PyExc_ValueError, "fds and everies must have the same length, interval_ns be positive");
        return NULL;
    }
    const int32_t *descriptors = fds.buf, *every = everies.buf;
    Py_BEGIN_ALLOW_THREADS
    int64_t lag;
    for (int first = 1; wait_for_tick(start_ns, interval_ns, end_tick, first, &tick, &lag) == TICK_DUE; first = 0)
        for (Py_ssize_t i = 0; i < fds.len / 4; i++)
            if (every[i] > 0 && tick % every[i] == 0) pread(descriptors[i], buffer.buf, (size_t)buffer.len, 0);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&fds);
    PyBuffer_Release(&everies);
    PyBuffer_Release(&buffer);
    return PyLong_FromLongLong(tick);
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS, scan_doc},
    {"read_each", read_each, METH_VARARGS, read_each_doc},
    {"read_each_on_schedule", read_each_on_schedule, METH_VARARGS, read_each_on_schedule_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_tokenscan",
    "Reads kernel text files and picks numbers out by token position (see scan).", -1, methods,
};

PyMODINIT_FUNC PyInit__tokenscan(void) {
    if (PyType_Ready(&ScanBatchType) < 0) return NULL;
    PyObject *created = PyModule_Create(&module);
    if (created == NULL) return NULL;
    Py_INCREF(&ScanBatchType);
    if (PyModule_AddObject(created, "ScanBatch", (PyObject *)&ScanBatchType) < 0) {
        Py_DECREF(&ScanBatchType);
        Py_DECREF(created);
        return NULL;
    }
    return created;
}
