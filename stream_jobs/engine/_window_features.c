/* The features of one window's channels (features.py), a channel at a time.

   A worker computes them for every host every second: nine statistics of each of hundreds of channels over a few
   dozen samples. In numpy that is some fifty array operations, each with a temporary the size of the window, so
   the calls, not the arithmetic, take the time. This module does the same arithmetic, in the same order, a channel
   at a time: mean and spread of the samples divided by their largest magnitude, skew and excess kurtosis (biased
   Fisher moments), least-squares slope, lag-1 autocorrelation and the gap between the halves' means in spreads.

   Dynamic features are computed here only for windows of at least three samples, every one finite (the usual
   window); for any other the call returns False and numpy computes them, so this module never decides what a
   missing sample means. Event features (total, bursts, largest step) skip missing steps, as numpy does. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <string.h>

enum { MEAN, STD, LOW, HIGH, SKEW, KURTOSIS, SLOPE, ACF1, STATIONARITY, FEATURES };

/* One channel's samples x[0..n) at `stride` doubles apart → its FEATURES statistics in out; 0 when a sample is not
   finite. t holds the sample times centred on their mean and t_energy their sum of squares. */
static int channel_features(const double *x, Py_ssize_t stride, Py_ssize_t n, const double *t, double t_energy,
                            double *scaled, double *out) {
    double low = INFINITY, high = -INFINITY;
    for (Py_ssize_t i = 0; i < n; i++) {
        double value = x[i * stride];
        if (!isfinite(value)) return 0;
        if (value < low) low = value;
        if (value > high) high = value;
    }
    double magnitude = fmax(fabs(low), fabs(high));
    double scale = magnitude > 0 && isfinite(magnitude) ? magnitude : 1.0;
    Py_ssize_t half = n / 2;
    double total = 0.0, first_half = 0.0, second_half = 0.0;
    for (Py_ssize_t i = 0; i < n; i++) {
        scaled[i] = x[i * stride] / scale;
        total += scaled[i];
        if (i < half) first_half += scaled[i]; else second_half += scaled[i];
    }
    double mean = total / (double)n;
    double energy = 0.0, cubes = 0.0, fourths = 0.0, trend = 0.0, lagged = 0.0, previous = 0.0;
    for (Py_ssize_t i = 0; i < n; i++) {
        double centred = scaled[i] - mean, squared = centred * centred;
        energy += squared;
        cubes += squared * centred;
        fourths += squared * squared;
        trend += t[i] * centred;
        if (i) lagged += previous * centred;
        previous = centred;
    }
    double variance = energy / (double)n, spread = sqrt(variance), cubed = variance * spread;
    int flat = low == high;
    double slope = t_energy > 0 ? trend / t_energy * scale : NAN;
    double gap = fabs(first_half / (double)half - second_half / (double)(n - half));
    out[MEAN] = mean * scale;
    out[STD] = spread * scale;
    out[LOW] = low;
    out[HIGH] = high;
    out[SKEW] = !flat && cubed > 0 ? cubes / (double)n / cubed : 0.0;
    out[KURTOSIS] = (!flat && variance * variance > 0 ? fourths / (double)n / (variance * variance) : 3.0) - 3.0;
    out[SLOPE] = isfinite(slope) ? slope : NAN;
    out[ACF1] = !flat && energy > 0 ? lagged / energy : 0.0;
    out[STATIONARITY] = !flat && spread > 0 ? gap / spread : 0.0;
    return 1;
}

/* One event counter's increments y[0..n) at `stride` doubles apart → total, bursts (maximal runs of positive
   increments, a missing step neither ending nor starting one) and largest increment; NaN without any step. */
static void event_channel_features(const double *y, Py_ssize_t stride, Py_ssize_t n, double *out) {
    double total = 0.0, largest = -INFINITY, bursts = 0.0;
    Py_ssize_t steps = 0;
    int previous_positive = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        double increment = y[i * stride];
        if (!isfinite(increment)) continue;
        steps++;
        total += increment;
        if (increment > largest) largest = increment;
        int positive = increment > 0;
        if (positive && !previous_positive) bursts += 1.0;
        previous_positive = positive;
    }
    out[0] = steps ? total : NAN;
    out[1] = steps ? bursts : NAN;
    out[2] = steps ? largest : NAN;
}

static int float64_buffer(PyObject *object, Py_buffer *view, int flags, int dimensions, const char *what) {
    if (PyObject_GetBuffer(object, view, flags | PyBUF_FORMAT | PyBUF_STRIDES) < 0) return 0;
    if (view->ndim != dimensions || view->itemsize != sizeof(double) || strcmp(view->format, "d") != 0) {
        PyErr_Format(PyExc_ValueError, "%s must be a %d-dimensional float64 array", what, dimensions);
        PyBuffer_Release(view);
        return 0;
    }
    for (int d = 0; d < dimensions; d++) {
        if (view->strides[d] % (Py_ssize_t)sizeof(double) != 0) {
            PyErr_Format(PyExc_ValueError, "%s must be aligned to its float64 items", what);
            PyBuffer_Release(view);
            return 0;
        }
    }
    return 1;
}

/* dynamic_features(signal, t_centred, t_energy, out) -> bool: signal (n, c) float64 of any strides, t_centred (n,)
   contiguous, out (c, 9) C-contiguous; fills out and returns True when there are at least three samples and every
   one is finite, else False. */
static PyObject *dynamic_features(PyObject *self, PyObject *args) {
    PyObject *signal_object, *times_object, *out_object;
    double t_energy;
    if (!PyArg_ParseTuple(args, "OOdO", &signal_object, &times_object, &t_energy, &out_object)) return NULL;
    Py_buffer signal, times, out;
    if (!float64_buffer(signal_object, &signal, PyBUF_SIMPLE, 2, "signal")) return NULL;
    if (!float64_buffer(times_object, &times, PyBUF_C_CONTIGUOUS, 1, "t_centred")) {
        PyBuffer_Release(&signal);
        return NULL;
    }
    if (!float64_buffer(out_object, &out, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS, 2, "out")) {
        PyBuffer_Release(&signal);
        PyBuffer_Release(&times);
        return NULL;
    }
    Py_ssize_t n = signal.shape[0], channels = signal.shape[1];
    int finite = 1;
    double *scaled = NULL;
    if (times.shape[0] != n || out.shape[0] != channels || out.shape[1] != FEATURES) {
        PyErr_Format(PyExc_ValueError, "signal (%zd, %zd), t_centred (%zd,) and out (%zd, %zd) do not fit; expected "
                     "one time per sample and out (channels, %d)", n, channels, times.shape[0], out.shape[0],
                     out.shape[1], FEATURES);
    } else if (n < 3) {
        finite = 0;
    } else if (!(scaled = PyMem_Malloc(n * sizeof(double)))) {
        PyErr_NoMemory();
    } else {
        Py_ssize_t row = signal.strides[0] / (Py_ssize_t)sizeof(double);
        Py_ssize_t column = signal.strides[1] / (Py_ssize_t)sizeof(double);
        for (Py_ssize_t j = 0; j < channels && finite; j++)
            finite = channel_features((const double *)signal.buf + j * column, row, n, times.buf, t_energy, scaled,
                                      (double *)out.buf + j * FEATURES);
    }
    PyMem_Free(scaled);
    PyBuffer_Release(&signal);
    PyBuffer_Release(&times);
    PyBuffer_Release(&out);
    if (PyErr_Occurred()) return NULL;
    return PyBool_FromLong(finite);
}

/* event_features(increments, out) -> None: increments (n, c) float64 of any strides, out (c, 3) C-contiguous. */
static PyObject *event_features(PyObject *self, PyObject *args) {
    PyObject *increments_object, *out_object;
    if (!PyArg_ParseTuple(args, "OO", &increments_object, &out_object)) return NULL;
    Py_buffer increments, out;
    if (!float64_buffer(increments_object, &increments, PyBUF_SIMPLE, 2, "increments")) return NULL;
    if (!float64_buffer(out_object, &out, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS, 2, "out")) {
        PyBuffer_Release(&increments);
        return NULL;
    }
    Py_ssize_t n = increments.shape[0], channels = increments.shape[1];
    if (out.shape[0] != channels || out.shape[1] != 3) {
        PyErr_Format(PyExc_ValueError, "increments (%zd, %zd) and out (%zd, %zd) do not fit; expected out (channels, 3)",
                     n, channels, out.shape[0], out.shape[1]);
    } else {
        Py_ssize_t row = increments.strides[0] / (Py_ssize_t)sizeof(double);
        Py_ssize_t column = increments.strides[1] / (Py_ssize_t)sizeof(double);
        for (Py_ssize_t j = 0; j < channels; j++)
            event_channel_features((const double *)increments.buf + j * column, row, n, (double *)out.buf + j * 3);
    }
    PyBuffer_Release(&increments);
    PyBuffer_Release(&out);
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"dynamic_features", dynamic_features, METH_VARARGS,
     "dynamic_features(signal, t_centred, t_energy, out) -> bool: a window's dynamic features, where all finite."},
    {"event_features", event_features, METH_VARARGS,
     "event_features(increments, out) -> None: each event counter's total, bursts and largest increment."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_window_features",
                                    "The features of a window's channels, a channel at a time.", -1, methods};

PyMODINIT_FUNC PyInit__window_features(void) { return PyModule_Create(&module); }
