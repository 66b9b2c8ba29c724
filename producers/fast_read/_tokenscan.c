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
#include <unistd.h>

static inline int is_space(unsigned char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

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
    Py_buffer data, wanted, slots, out, scales, labels;
} Buffers;

static void release(Buffers *b) {
    Py_buffer *all[] = {&b->data, &b->wanted, &b->slots, &b->out, &b->scales, &b->labels};
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
"scan(fd, buffer, length, wanted, slots, out, scales, labels, base) -> (length, tokens, label_hash, ok)\n\n"
"With fd >= 0, pread the file from offset 0 into the writable buffer; otherwise use its first length bytes.\n"
"wanted (int32, ascending) are token positions whose numbers go to out[slots[i]] (float64), times scales[i]\n"
"when scales (float64) is not None; labels (int32, ascending) are token positions fingerprinted into label_hash.\n"
"ok is 0 when the buffer was filled (the file may be longer), a wanted token is missing, or one is not a number.");

static PyObject *scan(PyObject *module, PyObject *args) {
    int fd, base;
    Py_ssize_t length;
    PyObject *scales_object;
    Buffers b;
    memset(&b, 0, sizeof(b));
    if (!PyArg_ParseTuple(args, "iw*ny*y*w*Oy*i", &fd, &b.data, &length, &b.wanted, &b.slots, &b.out,
                          &scales_object, &b.labels, &base))
        return NULL;
    if (scales_object != Py_None && PyObject_GetBuffer(scales_object, &b.scales, PyBUF_SIMPLE) < 0) {
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
    if (b.slots.len / 4 != wanted_count || (b.scales.obj != NULL && b.scales.len / 8 != wanted_count)) {
        release(&b);
        PyErr_SetString(PyExc_ValueError, "wanted, slots and scales must have the same length");
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
    double *out = b.out.buf;
    const double *scales = b.scales.obj != NULL ? b.scales.buf : NULL;
    int ok = fd < 0 || length < b.data.len;
    uint64_t hash = 14695981039346656037ULL;
    Py_ssize_t token = 0, next_wanted = 0, next_label = 0, at = 0;
    while (at < length) {
        while (at < length && is_space(text[at])) at++;
        if (at == length) break;
        Py_ssize_t start = at;
        while (at < length && !is_space(text[at])) at++;
        while (next_label < label_count && labels[next_label] == token) {
            hash = fnv1a(hash, text + start, at - start);
            hash = fnv1a(hash, (const unsigned char *)"\x1f", 1);
            next_label++;
        }
        while (next_wanted < wanted_count && wanted[next_wanted] == token) {
            double value;
            if (ok && token_to_double(text + start, at - start, base, &value))
                out[slots[next_wanted]] = scales != NULL ? value * scales[next_wanted] : value;
            else
                ok = 0;
            next_wanted++;
        }
        token++;
    }
    if (next_wanted < wanted_count) ok = 0;
    release(&b);
    return Py_BuildValue("nnKi", length, token, (unsigned long long)hash, ok);
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS, scan_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_tokenscan",
    "Reads kernel text files and picks numbers out by token position (see scan).", -1, methods,
};

PyMODINIT_FUNC PyInit__tokenscan(void) { return PyModule_Create(&module); }
