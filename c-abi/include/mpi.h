/*
 * mpi.h -- the C interface of this project's libmpi.so.
 *
 * Binary compatible with MPICH 4.0 (the "MPICH ABI"): every handle is an int with the
 * value MPICH gives it, MPI_Status has MPICH's five-int layout, and the error classes,
 * limits and special values are MPICH's. A program compiled against MPICH's mpi.h runs
 * on this library unmodified, and a program compiled against this header links and
 * runs the same way against MPICH.
 *
 * This file is also the single source of truth for the library itself: the Rust side
 * (c-abi/build.rs) runs bindgen over it, so every value below exists exactly once.
 *
 * Every function declared here exists twice: as MPI_Xxx and as PMPI_Xxx (the
 * profiling interface). A tool may define its own MPI_Xxx and call PMPI_Xxx inside.
 */
#ifndef MPI_INCLUDED
#define MPI_INCLUDED

#if defined(__cplusplus)
extern "C" {
#endif

/* ==== Version =========================================================================== */

/* The MPI standard version whose constants and calling conventions this header follows. */
#define MPI_VERSION    4
#define MPI_SUBVERSION 0

/* ==== Basic integer types ================================================================ */

typedef long MPI_Aint;   /* an address, or a difference of addresses */
typedef long MPI_Offset; /* a file offset */
typedef long MPI_Count;  /* a large count (bytes or elements) */
typedef int  MPI_Fint;   /* the C type of a Fortran INTEGER (Fortran handles = C handles) */

/* ==== Handle types ======================================================================= */
/*
 * A handle is an int. Its top bits say what it is (MPICH's encoding): bits 30-31 the kind
 * (0 invalid/null, 1 predefined, 2 and 3 user-created) and bits 26-29 the object type.
 */
typedef int MPI_Comm;
typedef int MPI_Group;
typedef int MPI_Datatype;
typedef int MPI_Op;
typedef int MPI_Request;
typedef int MPI_Message;
typedef int MPI_Errhandler;
typedef int MPI_Info;
typedef int MPI_Win;
typedef int MPI_Session;
typedef struct ADIOI_FileD *MPI_File; /* a pointer in MPICH (ROMIO), kept for the ABI */

/* ==== Null handles ======================================================================= */

#define MPI_COMM_NULL       ((MPI_Comm)0x04000000)
#define MPI_GROUP_NULL      ((MPI_Group)0x08000000)
#define MPI_DATATYPE_NULL   ((MPI_Datatype)0x0c000000)
#define MPI_ERRHANDLER_NULL ((MPI_Errhandler)0x14000000)
#define MPI_OP_NULL         ((MPI_Op)0x18000000)
#define MPI_INFO_NULL       ((MPI_Info)0x1c000000)
#define MPI_WIN_NULL        ((MPI_Win)0x20000000)
#define MPI_REQUEST_NULL    ((MPI_Request)0x2c000000)
#define MPI_MESSAGE_NULL    ((MPI_Message)0x2c000000)
#define MPI_MESSAGE_NO_PROC ((MPI_Message)0x6c000000)
#define MPI_SESSION_NULL    ((MPI_Session)0x38000000)
#define MPI_FILE_NULL       ((MPI_File)0)

/* ==== Predefined communicators, groups, info ============================================= */

#define MPI_COMM_WORLD  ((MPI_Comm)0x44000000)
#define MPI_COMM_SELF   ((MPI_Comm)0x44000001)
#define MPI_GROUP_EMPTY ((MPI_Group)0x48000000)
#define MPI_INFO_ENV    ((MPI_Info)0x5c000001)

/* Results of comparing communicators or groups. */
#define MPI_IDENT     0
#define MPI_CONGRUENT 1
#define MPI_SIMILAR   2
#define MPI_UNEQUAL   3

/* ==== Predefined datatypes =============================================================== */
/*
 * A predefined datatype's handle carries its size in bytes in bits 8-15 (0x4c00SSnn);
 * the pair types used with MPI_MINLOC/MPI_MAXLOC whose layout has padding are 0x8c0000nn.
 */

/* C basic types */
#define MPI_CHAR               ((MPI_Datatype)0x4c000101)
#define MPI_SIGNED_CHAR        ((MPI_Datatype)0x4c000118)
#define MPI_UNSIGNED_CHAR      ((MPI_Datatype)0x4c000102)
#define MPI_BYTE               ((MPI_Datatype)0x4c00010d)
#define MPI_WCHAR              ((MPI_Datatype)0x4c00040e)
#define MPI_SHORT              ((MPI_Datatype)0x4c000203)
#define MPI_UNSIGNED_SHORT     ((MPI_Datatype)0x4c000204)
#define MPI_INT                ((MPI_Datatype)0x4c000405)
#define MPI_UNSIGNED           ((MPI_Datatype)0x4c000406)
#define MPI_LONG               ((MPI_Datatype)0x4c000807)
#define MPI_UNSIGNED_LONG      ((MPI_Datatype)0x4c000808)
#define MPI_LONG_LONG_INT      ((MPI_Datatype)0x4c000809)
#define MPI_LONG_LONG          MPI_LONG_LONG_INT
#define MPI_UNSIGNED_LONG_LONG ((MPI_Datatype)0x4c000819)
#define MPI_FLOAT              ((MPI_Datatype)0x4c00040a)
#define MPI_DOUBLE             ((MPI_Datatype)0x4c00080b)
#define MPI_LONG_DOUBLE        ((MPI_Datatype)0x4c00100c)
#define MPI_PACKED             ((MPI_Datatype)0x4c00010f)

/* Deprecated markers of a type's bounds (size 0) */
#define MPI_LB                 ((MPI_Datatype)0x4c000010)
#define MPI_UB                 ((MPI_Datatype)0x4c000011)

/* Value-and-index pairs, for MPI_MINLOC and MPI_MAXLOC: struct { T value; int index; } */
#define MPI_FLOAT_INT          ((MPI_Datatype)0x8c000000)
#define MPI_DOUBLE_INT         ((MPI_Datatype)0x8c000001)
#define MPI_LONG_INT           ((MPI_Datatype)0x8c000002)
#define MPI_SHORT_INT          ((MPI_Datatype)0x8c000003)
#define MPI_LONG_DOUBLE_INT    ((MPI_Datatype)0x8c000004)
#define MPI_2INT               ((MPI_Datatype)0x4c000816)

/* C99 fixed-width integers */
#define MPI_INT8_T             ((MPI_Datatype)0x4c000137)
#define MPI_INT16_T            ((MPI_Datatype)0x4c000238)
#define MPI_INT32_T            ((MPI_Datatype)0x4c000439)
#define MPI_INT64_T            ((MPI_Datatype)0x4c00083a)
#define MPI_UINT8_T            ((MPI_Datatype)0x4c00013b)
#define MPI_UINT16_T           ((MPI_Datatype)0x4c00023c)
#define MPI_UINT32_T           ((MPI_Datatype)0x4c00043d)
#define MPI_UINT64_T           ((MPI_Datatype)0x4c00083e)

/* C99 bool and complex */
#define MPI_C_BOOL                ((MPI_Datatype)0x4c00013f)
#define MPI_C_FLOAT_COMPLEX       ((MPI_Datatype)0x4c000840)
#define MPI_C_COMPLEX             MPI_C_FLOAT_COMPLEX
#define MPI_C_DOUBLE_COMPLEX      ((MPI_Datatype)0x4c001041)
#define MPI_C_LONG_DOUBLE_COMPLEX ((MPI_Datatype)0x4c002042)
#define MPIX_C_FLOAT16            ((MPI_Datatype)0x4c000246)

/* Address, offset and count integers */
#define MPI_AINT               ((MPI_Datatype)0x4c000843)
#define MPI_OFFSET             ((MPI_Datatype)0x4c000844)
#define MPI_COUNT              ((MPI_Datatype)0x4c000845)

/* C++ types */
#define MPI_CXX_BOOL                ((MPI_Datatype)0x4c000133)
#define MPI_CXX_FLOAT_COMPLEX       ((MPI_Datatype)0x4c000834)
#define MPI_CXX_DOUBLE_COMPLEX      ((MPI_Datatype)0x4c001035)
#define MPI_CXX_LONG_DOUBLE_COMPLEX ((MPI_Datatype)0x4c002036)

/* Fortran types (usable from C too, e.g. to talk to a Fortran rank) */
#define MPI_CHARACTER          ((MPI_Datatype)0x4c00011a)
#define MPI_LOGICAL            ((MPI_Datatype)0x4c00041d)
#define MPI_INTEGER            ((MPI_Datatype)0x4c00041b)
#define MPI_REAL               ((MPI_Datatype)0x4c00041c)
#define MPI_DOUBLE_PRECISION   ((MPI_Datatype)0x4c00081f)
#define MPI_COMPLEX            ((MPI_Datatype)0x4c00081e)
#define MPI_DOUBLE_COMPLEX     ((MPI_Datatype)0x4c001022)
#define MPI_2INTEGER           ((MPI_Datatype)0x4c000820)
#define MPI_2REAL              ((MPI_Datatype)0x4c000821)
#define MPI_2DOUBLE_PRECISION  ((MPI_Datatype)0x4c001023)
#define MPI_INTEGER1           ((MPI_Datatype)0x4c00012d)
#define MPI_INTEGER2           ((MPI_Datatype)0x4c00022f)
#define MPI_INTEGER4           ((MPI_Datatype)0x4c000430)
#define MPI_INTEGER8           ((MPI_Datatype)0x4c000831)
#define MPI_INTEGER16          MPI_DATATYPE_NULL /* not available, as in MPICH */
#define MPI_REAL4              ((MPI_Datatype)0x4c000427)
#define MPI_REAL8              ((MPI_Datatype)0x4c000829)
#define MPI_REAL16             ((MPI_Datatype)0x4c00102b)
#define MPI_COMPLEX8           ((MPI_Datatype)0x4c000828)
#define MPI_COMPLEX16          ((MPI_Datatype)0x4c00102a)
#define MPI_COMPLEX32          ((MPI_Datatype)0x4c00202c)

/* Classes of types, for MPI_Type_match_size */
#define MPI_TYPECLASS_REAL    1
#define MPI_TYPECLASS_INTEGER 2
#define MPI_TYPECLASS_COMPLEX 3

/* ==== Predefined reduction operations ==================================================== */

#define MPI_MAX     ((MPI_Op)0x58000001)
#define MPI_MIN     ((MPI_Op)0x58000002)
#define MPI_SUM     ((MPI_Op)0x58000003)
#define MPI_PROD    ((MPI_Op)0x58000004)
#define MPI_LAND    ((MPI_Op)0x58000005)
#define MPI_BAND    ((MPI_Op)0x58000006)
#define MPI_LOR     ((MPI_Op)0x58000007)
#define MPI_BOR     ((MPI_Op)0x58000008)
#define MPI_LXOR    ((MPI_Op)0x58000009)
#define MPI_BXOR    ((MPI_Op)0x5800000a)
#define MPI_MINLOC  ((MPI_Op)0x5800000b)
#define MPI_MAXLOC  ((MPI_Op)0x5800000c)
#define MPI_REPLACE ((MPI_Op)0x5800000d)
#define MPI_NO_OP   ((MPI_Op)0x5800000e)

/* ==== Error handlers ===================================================================== */

#define MPI_ERRORS_ARE_FATAL ((MPI_Errhandler)0x54000000) /* the default: report, end the job */
#define MPI_ERRORS_RETURN    ((MPI_Errhandler)0x54000001) /* return the error code */
#define MPI_ERRORS_ABORT     ((MPI_Errhandler)0x54000003) /* report, end the job (MPI 4) */

/* ==== Status ============================================================================= */
/*
 * The byte count of a completed receive is 63 bits split over count_lo (low 32 bits) and
 * count_hi_and_cancelled (the high bits, shifted left by one); bit 0 of the latter says
 * whether the operation was cancelled. Read them through MPI_Get_count and
 * MPI_Test_cancelled.
 */
typedef struct MPI_Status {
    int count_lo;
    int count_hi_and_cancelled;
    int MPI_SOURCE;
    int MPI_TAG;
    int MPI_ERROR;
} MPI_Status;

#define MPI_STATUS_IGNORE   ((MPI_Status *)1)
#define MPI_STATUSES_IGNORE ((MPI_Status *)1)
#define MPI_ERRCODES_IGNORE ((int *)0)

/* ==== Special values ===================================================================== */

#define MPI_PROC_NULL   (-1)     /* a rank that sends and receives nothing, at once */
#define MPI_ANY_SOURCE  (-2)     /* receive from any rank */
#define MPI_ROOT        (-3)     /* the root in an intercommunicator collective */
#define MPI_ANY_TAG     (-1)     /* receive with any tag */
#define MPI_UNDEFINED   (-32766) /* e.g. a count that is not a whole number of elements */

#define MPI_BOTTOM      ((void *)0)
#define MPI_IN_PLACE    ((void *)-1)
#define MPI_ARGV_NULL   ((char **)0)
#define MPI_ARGVS_NULL  ((char ***)0)

#define MPI_KEYVAL_INVALID 0x24000000

/* Bytes of MPI_Buffer_attach's buffer that each buffered send needs besides its data. */
#define MPI_BSEND_OVERHEAD 96

/* ==== Thread support levels ============================================================== */

#define MPI_THREAD_SINGLE     0
#define MPI_THREAD_FUNNELED   1
#define MPI_THREAD_SERIALIZED 2
#define MPI_THREAD_MULTIPLE   3

/* ==== String lengths (each includes the terminating NUL) ================================= */

#define MPI_MAX_PROCESSOR_NAME         128
#define MPI_MAX_LIBRARY_VERSION_STRING 8192
#define MPI_MAX_ERROR_STRING           512
#define MPI_MAX_PORT_NAME              256
#define MPI_MAX_OBJECT_NAME            128
#define MPI_MAX_INFO_KEY               255
#define MPI_MAX_INFO_VAL               1024
#define MPI_MAX_STRINGTAG_LEN          256
#define MPI_MAX_PSET_NAME_LEN          256

/* ==== Predefined attribute keys (MPI_Comm_get_attr) ====================================== */

#define MPI_TAG_UB          0x64400001 /* largest usable tag */
#define MPI_HOST            0x64400003 /* rank of the host process, or MPI_PROC_NULL */
#define MPI_IO              0x64400005 /* a rank that can do I/O, or MPI_ANY_SOURCE for all */
#define MPI_WTIME_IS_GLOBAL 0x64400007 /* whether MPI_Wtime is synchronized across ranks */
#define MPI_UNIVERSE_SIZE   0x64400009
#define MPI_LASTUSEDCODE    0x6440000b
#define MPI_APPNUM          0x6440000d

/* ==== Error classes ====================================================================== */
/* This library returns the class itself as the error code. */

#define MPI_SUCCESS                    0
#define MPI_ERR_BUFFER                 1  /* invalid buffer pointer */
#define MPI_ERR_COUNT                  2  /* invalid count */
#define MPI_ERR_TYPE                   3  /* invalid datatype */
#define MPI_ERR_TAG                    4  /* invalid tag */
#define MPI_ERR_COMM                   5  /* invalid communicator */
#define MPI_ERR_RANK                   6  /* invalid rank */
#define MPI_ERR_ROOT                   7  /* invalid root */
#define MPI_ERR_GROUP                  8  /* invalid group */
#define MPI_ERR_OP                     9  /* invalid operation */
#define MPI_ERR_TOPOLOGY               10 /* invalid topology */
#define MPI_ERR_DIMS                   11 /* invalid dimensions */
#define MPI_ERR_ARG                    12 /* some other argument is invalid */
#define MPI_ERR_UNKNOWN                13 /* unknown error */
#define MPI_ERR_TRUNCATE               14 /* message longer than the receive buffer */
#define MPI_ERR_OTHER                  15 /* other error: see MPI_Error_string */
#define MPI_ERR_INTERN                 16 /* internal error */
#define MPI_ERR_IN_STATUS              17 /* look in each status's MPI_ERROR */
#define MPI_ERR_PENDING                18 /* operation neither completed nor failed */
#define MPI_ERR_REQUEST                19 /* invalid request */
#define MPI_ERR_ACCESS                 20
#define MPI_ERR_AMODE                  21
#define MPI_ERR_BAD_FILE               22
#define MPI_ERR_CONVERSION             23
#define MPI_ERR_DUP_DATAREP            24
#define MPI_ERR_FILE_EXISTS            25
#define MPI_ERR_FILE_IN_USE            26
#define MPI_ERR_FILE                   27
#define MPI_ERR_INFO                   28
#define MPI_ERR_INFO_KEY               29
#define MPI_ERR_INFO_VALUE             30
#define MPI_ERR_INFO_NOKEY             31
#define MPI_ERR_IO                     32
#define MPI_ERR_NAME                   33
#define MPI_ERR_NO_MEM                 34
#define MPI_ERR_NOT_SAME               35
#define MPI_ERR_NO_SPACE               36
#define MPI_ERR_NO_SUCH_FILE           37
#define MPI_ERR_PORT                   38
#define MPI_ERR_QUOTA                  39
#define MPI_ERR_READ_ONLY              40
#define MPI_ERR_SERVICE                41
#define MPI_ERR_SPAWN                  42
#define MPI_ERR_UNSUPPORTED_DATAREP    43
#define MPI_ERR_UNSUPPORTED_OPERATION  44
#define MPI_ERR_WIN                    45
#define MPI_ERR_BASE                   46
#define MPI_ERR_LOCKTYPE               47
#define MPI_ERR_KEYVAL                 48
#define MPI_ERR_RMA_CONFLICT           49
#define MPI_ERR_RMA_SYNC               50
#define MPI_ERR_SIZE                   51
#define MPI_ERR_DISP                   52
#define MPI_ERR_ASSERT                 53
#define MPI_ERR_RMA_RANGE              55
#define MPI_ERR_RMA_ATTACH             56
#define MPI_ERR_RMA_SHARED             57
#define MPI_ERR_RMA_FLAVOR             58
#define MPI_T_ERR_MEMORY               59
#define MPI_T_ERR_NOT_INITIALIZED      60
#define MPI_T_ERR_CANNOT_INIT          61
#define MPI_T_ERR_INVALID_INDEX        62
#define MPI_T_ERR_INVALID_ITEM         63
#define MPI_T_ERR_INVALID_HANDLE       64
#define MPI_T_ERR_OUT_OF_HANDLES       65
#define MPI_T_ERR_OUT_OF_SESSIONS      66
#define MPI_T_ERR_INVALID_SESSION      67
#define MPI_T_ERR_CVAR_SET_NOT_NOW     68
#define MPI_T_ERR_CVAR_SET_NEVER       69
#define MPI_T_ERR_PVAR_NO_STARTSTOP    70
#define MPI_T_ERR_PVAR_NO_WRITE        71
#define MPI_T_ERR_PVAR_NO_ATOMIC       72
#define MPI_T_ERR_INVALID_NAME         73
#define MPI_T_ERR_INVALID              74
#define MPI_ERR_SESSION                75
#define MPI_ERR_PROC_ABORTED           76
#define MPI_ERR_VALUE_TOO_LARGE        77
#define MPI_T_ERR_NOT_SUPPORTED        78
#define MPI_ERR_LASTCODE               0x3fffffff /* no error code is larger */

/* ==== Callback types ===================================================================== */

typedef void (MPI_User_function)(void *invec, void *inoutvec, int *len, MPI_Datatype *datatype);
typedef void (MPI_Comm_errhandler_function)(MPI_Comm *comm, int *errcode, ...);
typedef MPI_Comm_errhandler_function MPI_Comm_errhandler_fn;
typedef int (MPI_Comm_copy_attr_function)(MPI_Comm oldcomm, int keyval, void *extra_state,
                                          void *attribute_val_in, void *attribute_val_out,
                                          int *flag);
typedef int (MPI_Comm_delete_attr_function)(MPI_Comm comm, int keyval, void *attribute_val,
                                            void *extra_state);

/* ==== Functions ========================================================================== */
/*
 * The MPI_ entry points. Each has a PMPI_ twin below with the same behaviour. Errors are
 * returned as error classes after the communicator's error handler ran (by default
 * MPI_ERRORS_ARE_FATAL, which reports the error and ends the job instead of returning).
 */

/* Start-up and shut-down */
int MPI_Init(int *argc, char ***argv);
int MPI_Init_thread(int *argc, char ***argv, int required, int *provided);
int MPI_Query_thread(int *provided);
int MPI_Is_thread_main(int *flag);
int MPI_Finalize(void);
int MPI_Initialized(int *flag);
int MPI_Finalized(int *flag);
int MPI_Abort(MPI_Comm comm, int errorcode);

/* Communicators */
int MPI_Comm_size(MPI_Comm comm, int *size);
int MPI_Comm_rank(MPI_Comm comm, int *rank);
int MPI_Comm_get_attr(MPI_Comm comm, int comm_keyval, void *attribute_val, int *flag);

/* Blocking point-to-point */
int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
             MPI_Comm comm);
int MPI_Ssend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
              MPI_Comm comm);
int MPI_Bsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
              MPI_Comm comm);
int MPI_Rsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
              MPI_Comm comm);
int MPI_Recv(void *buf, int count, MPI_Datatype datatype, int source, int tag,
             MPI_Comm comm, MPI_Status *status);
int MPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest,
                 int sendtag, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                 int source, int recvtag, MPI_Comm comm, MPI_Status *status);
int MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype datatype, int dest, int sendtag,
                         int source, int recvtag, MPI_Comm comm, MPI_Status *status);
int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status);
int MPI_Iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status);

/* Nonblocking point-to-point */
int MPI_Isend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
              MPI_Comm comm, MPI_Request *request);
int MPI_Issend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
               MPI_Comm comm, MPI_Request *request);
int MPI_Ibsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
               MPI_Comm comm, MPI_Request *request);
int MPI_Irsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
               MPI_Comm comm, MPI_Request *request);
int MPI_Irecv(void *buf, int count, MPI_Datatype datatype, int source, int tag,
              MPI_Comm comm, MPI_Request *request);

/* Persistent requests */
int MPI_Send_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                  MPI_Comm comm, MPI_Request *request);
int MPI_Ssend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                   MPI_Comm comm, MPI_Request *request);
int MPI_Bsend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                   MPI_Comm comm, MPI_Request *request);
int MPI_Rsend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                   MPI_Comm comm, MPI_Request *request);
int MPI_Recv_init(void *buf, int count, MPI_Datatype datatype, int source, int tag,
                  MPI_Comm comm, MPI_Request *request);
int MPI_Start(MPI_Request *request);
int MPI_Startall(int count, MPI_Request array_of_requests[]);

/* Completion */
int MPI_Wait(MPI_Request *request, MPI_Status *status);
int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status);
int MPI_Waitall(int count, MPI_Request array_of_requests[], MPI_Status *array_of_statuses);
int MPI_Testall(int count, MPI_Request array_of_requests[], int *flag,
                MPI_Status *array_of_statuses);
int MPI_Waitany(int count, MPI_Request array_of_requests[], int *indx, MPI_Status *status);
int MPI_Testany(int count, MPI_Request array_of_requests[], int *indx, int *flag,
                MPI_Status *status);
int MPI_Waitsome(int incount, MPI_Request array_of_requests[], int *outcount,
                 int array_of_indices[], MPI_Status *array_of_statuses);
int MPI_Testsome(int incount, MPI_Request array_of_requests[], int *outcount,
                 int array_of_indices[], MPI_Status *array_of_statuses);
int MPI_Request_free(MPI_Request *request);
int MPI_Request_get_status(MPI_Request request, int *flag, MPI_Status *status);
int MPI_Cancel(MPI_Request *request);
int MPI_Test_cancelled(const MPI_Status *status, int *flag);

/* Status and datatype queries */
int MPI_Get_count(const MPI_Status *status, MPI_Datatype datatype, int *count);
int MPI_Get_elements(const MPI_Status *status, MPI_Datatype datatype, int *count);
int MPI_Get_elements_x(const MPI_Status *status, MPI_Datatype datatype, MPI_Count *count);
int MPI_Type_size(MPI_Datatype datatype, int *size);
int MPI_Type_size_x(MPI_Datatype datatype, MPI_Count *size);

/* Buffered-send buffer */
int MPI_Buffer_attach(void *buffer, int size);
int MPI_Buffer_detach(void *buffer_addr, int *size);

/* Collective */
int MPI_Barrier(MPI_Comm comm);

/* Errors */
int MPI_Comm_set_errhandler(MPI_Comm comm, MPI_Errhandler errhandler);
int MPI_Comm_get_errhandler(MPI_Comm comm, MPI_Errhandler *errhandler);
int MPI_Comm_call_errhandler(MPI_Comm comm, int errorcode);
int MPI_Error_string(int errorcode, char *string, int *resultlen);
int MPI_Error_class(int errorcode, int *errorclass);

/* Environment */
double MPI_Wtime(void);
double MPI_Wtick(void);
int MPI_Get_processor_name(char *name, int *resultlen);
int MPI_Get_version(int *version, int *subversion);
int MPI_Get_library_version(char *version, int *resultlen);
int MPI_Pcontrol(const int level, ...);

/* ---- The profiling interface: the same functions as PMPI_ ------------------------------ */

int PMPI_Init(int *argc, char ***argv);
int PMPI_Init_thread(int *argc, char ***argv, int required, int *provided);
int PMPI_Query_thread(int *provided);
int PMPI_Is_thread_main(int *flag);
int PMPI_Finalize(void);
int PMPI_Initialized(int *flag);
int PMPI_Finalized(int *flag);
int PMPI_Abort(MPI_Comm comm, int errorcode);

int PMPI_Comm_size(MPI_Comm comm, int *size);
int PMPI_Comm_rank(MPI_Comm comm, int *rank);
int PMPI_Comm_get_attr(MPI_Comm comm, int comm_keyval, void *attribute_val, int *flag);

int PMPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
              MPI_Comm comm);
int PMPI_Ssend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
               MPI_Comm comm);
int PMPI_Bsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
               MPI_Comm comm);
int PMPI_Rsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
               MPI_Comm comm);
int PMPI_Recv(void *buf, int count, MPI_Datatype datatype, int source, int tag,
              MPI_Comm comm, MPI_Status *status);
int PMPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest,
                  int sendtag, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                  int source, int recvtag, MPI_Comm comm, MPI_Status *status);
int PMPI_Sendrecv_replace(void *buf, int count, MPI_Datatype datatype, int dest, int sendtag,
                          int source, int recvtag, MPI_Comm comm, MPI_Status *status);
int PMPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status);
int PMPI_Iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status);

int PMPI_Isend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
               MPI_Comm comm, MPI_Request *request);
int PMPI_Issend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                MPI_Comm comm, MPI_Request *request);
int PMPI_Ibsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                MPI_Comm comm, MPI_Request *request);
int PMPI_Irsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                MPI_Comm comm, MPI_Request *request);
int PMPI_Irecv(void *buf, int count, MPI_Datatype datatype, int source, int tag,
               MPI_Comm comm, MPI_Request *request);

int PMPI_Send_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                   MPI_Comm comm, MPI_Request *request);
int PMPI_Ssend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                    MPI_Comm comm, MPI_Request *request);
int PMPI_Bsend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                    MPI_Comm comm, MPI_Request *request);
int PMPI_Rsend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                    MPI_Comm comm, MPI_Request *request);
int PMPI_Recv_init(void *buf, int count, MPI_Datatype datatype, int source, int tag,
                   MPI_Comm comm, MPI_Request *request);
int PMPI_Start(MPI_Request *request);
int PMPI_Startall(int count, MPI_Request array_of_requests[]);

int PMPI_Wait(MPI_Request *request, MPI_Status *status);
int PMPI_Test(MPI_Request *request, int *flag, MPI_Status *status);
int PMPI_Waitall(int count, MPI_Request array_of_requests[], MPI_Status *array_of_statuses);
int PMPI_Testall(int count, MPI_Request array_of_requests[], int *flag,
                 MPI_Status *array_of_statuses);
int PMPI_Waitany(int count, MPI_Request array_of_requests[], int *indx, MPI_Status *status);
int PMPI_Testany(int count, MPI_Request array_of_requests[], int *indx, int *flag,
                 MPI_Status *status);
int PMPI_Waitsome(int incount, MPI_Request array_of_requests[], int *outcount,
                  int array_of_indices[], MPI_Status *array_of_statuses);
int PMPI_Testsome(int incount, MPI_Request array_of_requests[], int *outcount,
                  int array_of_indices[], MPI_Status *array_of_statuses);
int PMPI_Request_free(MPI_Request *request);
int PMPI_Request_get_status(MPI_Request request, int *flag, MPI_Status *status);
int PMPI_Cancel(MPI_Request *request);
int PMPI_Test_cancelled(const MPI_Status *status, int *flag);

int PMPI_Get_count(const MPI_Status *status, MPI_Datatype datatype, int *count);
int PMPI_Get_elements(const MPI_Status *status, MPI_Datatype datatype, int *count);
int PMPI_Get_elements_x(const MPI_Status *status, MPI_Datatype datatype, MPI_Count *count);
int PMPI_Type_size(MPI_Datatype datatype, int *size);
int PMPI_Type_size_x(MPI_Datatype datatype, MPI_Count *size);

int PMPI_Buffer_attach(void *buffer, int size);
int PMPI_Buffer_detach(void *buffer_addr, int *size);

int PMPI_Barrier(MPI_Comm comm);

int PMPI_Comm_set_errhandler(MPI_Comm comm, MPI_Errhandler errhandler);
int PMPI_Comm_get_errhandler(MPI_Comm comm, MPI_Errhandler *errhandler);
int PMPI_Comm_call_errhandler(MPI_Comm comm, int errorcode);
int PMPI_Error_string(int errorcode, char *string, int *resultlen);
int PMPI_Error_class(int errorcode, int *errorclass);

double PMPI_Wtime(void);
double PMPI_Wtick(void);
int PMPI_Get_processor_name(char *name, int *resultlen);
int PMPI_Get_version(int *version, int *subversion);
int PMPI_Get_library_version(char *version, int *resultlen);
int PMPI_Pcontrol(const int level, ...);

#if defined(__cplusplus)
}
#endif

#endif /* MPI_INCLUDED */
