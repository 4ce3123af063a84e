//! vfio-user protocol (work in progress).
