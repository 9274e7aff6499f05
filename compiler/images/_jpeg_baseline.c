/* Transcode a JPEG to baseline without decoding it to pixels, with the system's libjpeg-turbo.
 *
 * The quantized DCT coefficients are read (jpeg_read_coefficients: the whole entropy-coded data,
 * every scan of a progressive file) and written again as one sequential scan with Huffman tables
 * optimized for them (jpeg_write_coefficients). The coefficients, quantization tables, sampling
 * factors and component ids do not change, so a decoder gives the same pixels as from the input.
 *
 * Markers: every APPn and COM segment of the input is written again, byte for byte and in order,
 * right after SOI; libjpeg writes no JFIF or Adobe segment of its own. The output therefore
 * holds the same EXIF, ICC profile, XMP and comments, and a decoder guesses the same colour
 * space (from JFIF, Adobe and component ids) as for the input. Restart markers are not kept (no
 * DRI); bytes after the EOI are dropped.
 *
 * libjpeg's warnings (corrupt data it would paper over) are errors, as are its errors; both
 * come back as ValueError with libjpeg's message. The GIL is released for the whole transcode.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>

#ifndef LIBJPEG_TURBO_VERSION_NUMBER
#error "needs libjpeg-turbo's jpeglib.h (jpeg_mem_src, jpeg_mem_dest)"
#endif

#define MAX_MARKER_BYTES 0xFFFF /* a whole segment's payload */

typedef struct {
    struct jpeg_error_mgr pub;
    jmp_buf escape;
    char message[JMSG_LENGTH_MAX];
} ErrorManager;

static void raise_error(j_common_ptr cinfo) {
    ErrorManager *err = (ErrorManager *)cinfo->err;
    (*cinfo->err->format_message)(cinfo, err->message);
    longjmp(err->escape, 1);
}

/* Warnings are errors (a damaged file is not stored as if it were whole); trace messages are
 * ignored. */
static void on_message(j_common_ptr cinfo, int level) {
    if (level < 0) raise_error(cinfo);
}

typedef struct {
    /* in */
    const unsigned char *data;
    size_t size;
    /* out: a buffer from malloc (libjpeg's memory destination), freed by the caller */
    unsigned char *out;
    unsigned long out_size;
    int failed;
    char message[JMSG_LENGTH_MAX];
} Job;

static void copy_markers(j_decompress_ptr src, j_compress_ptr dst) {
    for (jpeg_saved_marker_ptr m = src->marker_list; m != NULL; m = m->next)
        jpeg_write_marker(dst, m->marker, m->data, m->data_length);
}

/* Runs without the GIL. On success job->out holds job->out_size bytes of baseline JPEG. */
static void run(Job *job) {
    struct jpeg_decompress_struct src;
    struct jpeg_compress_struct dst;
    ErrorManager err; /* one for both objects: a failure in either jumps to the same place */
    /* volatile: read after a longjmp */
    volatile int src_created = 0, dst_created = 0;

    src.err = dst.err = jpeg_std_error(&err.pub);
    err.pub.error_exit = raise_error;
    err.pub.emit_message = on_message;
    if (setjmp(err.escape)) {
        job->failed = 1;
        memcpy(job->message, err.message, sizeof(job->message));
        if (dst_created) jpeg_destroy_compress(&dst);
        if (src_created) jpeg_destroy_decompress(&src);
        free(job->out);
        job->out = NULL;
        job->out_size = 0;
        return;
    }
    jpeg_create_decompress(&src);
    src_created = 1;
    jpeg_create_compress(&dst);
    dst_created = 1;

    jpeg_mem_src(&src, job->data, (unsigned long)job->size);
    jpeg_save_markers(&src, JPEG_COM, MAX_MARKER_BYTES);
    for (int n = 0; n < 16; n++) jpeg_save_markers(&src, JPEG_APP0 + n, MAX_MARKER_BYTES);
    jpeg_read_header(&src, TRUE);
    jvirt_barray_ptr *coefficients = jpeg_read_coefficients(&src);

    jpeg_copy_critical_parameters(&src, &dst);
    dst.write_JFIF_header = FALSE; /* the input's own APP0 and APP14, if any, are copied */
    dst.write_Adobe_marker = FALSE;
    dst.optimize_coding = TRUE;
    dst.restart_interval = 0;
    dst.restart_in_rows = 0;
    jpeg_mem_dest(&dst, &job->out, &job->out_size);
    jpeg_write_coefficients(&dst, coefficients);
    copy_markers(&src, &dst);
    jpeg_finish_compress(&dst);
    jpeg_finish_decompress(&src);
    jpeg_destroy_compress(&dst);
    jpeg_destroy_decompress(&src);
}

PyDoc_STRVAR(to_baseline_doc,
"to_baseline(data)\n"
"\n"
"The JPEG `data` (a bytes-like object) transcoded losslessly to baseline: the same DCT\n"
"coefficients in one sequential scan with optimized Huffman tables, the input's APPn and COM\n"
"segments kept. Returns bytes. Raises ValueError with libjpeg's message when libjpeg cannot\n"
"read the data or warns about it.");

static PyObject *to_baseline(PyObject *self, PyObject *args) {
    Py_buffer data;
    Job job;
    memset(&job, 0, sizeof(job));
    if (!PyArg_ParseTuple(args, "y*", &data)) return NULL;
    PyObject *result = NULL;
    if (data.len == 0) {
        PyErr_SetString(PyExc_ValueError, "empty data: not a JPEG");
    } else {
        job.data = data.buf;
        job.size = (size_t)data.len;
        Py_BEGIN_ALLOW_THREADS run(&job);
        Py_END_ALLOW_THREADS
        if (job.failed)
            PyErr_SetString(PyExc_ValueError, job.message);
        else
            result = PyBytes_FromStringAndSize((const char *)job.out, (Py_ssize_t)job.out_size);
        free(job.out);
    }
    PyBuffer_Release(&data);
    return result;
}

static PyMethodDef methods[] = {
    {"to_baseline", to_baseline, METH_VARARGS, to_baseline_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_jpeg_baseline",
    "Lossless transcodes of JPEGs to baseline with the system's libjpeg-turbo.", -1, methods,
};

PyMODINIT_FUNC PyInit__jpeg_baseline(void) {
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    if (PyModule_AddIntConstant(m, "LIBJPEG_TURBO_VERSION", LIBJPEG_TURBO_VERSION_NUMBER) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
