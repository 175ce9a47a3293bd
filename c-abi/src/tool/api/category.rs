//! `MPI_T_category_*`: one category per layer of the stack and one for the stack (see
//! [`crate::tool::catalog`]).

use super::{index_in, initialized, name_in, out, set_if_wanted, string_out, tool_fn, TResult};
use crate::abi::*;
use crate::cptr::Array;
use crate::tool::catalog::{self, CATEGORIES};
use crate::tool::{cvars, pvars};
use std::ffi::{c_char, c_int};

/// Writes the first `len` of `items` into the caller's `indices` array.
fn indices_out(indices: *mut c_int, len: c_int, items: &[usize]) -> TResult {
    let len = usize::try_from(len).map_err(|_| MPI_T_ERR_INVALID)?;
    let n = len.min(items.len());
    if n == 0 {
        return Ok(());
    }
    let array = Array::new(indices, n, "indices").map_err(|_| MPI_T_ERR_INVALID)?;
    for (k, &item) in items.iter().take(n).enumerate() {
        array.set(k, item as c_int);
    }
    Ok(())
}

tool_fn! {
    /// `MPI_T_category_get_num`: how many categories there are.
    fn MPI_T_category_get_num / PMPI_T_category_get_num(num_cat: *mut c_int) |st, tool| {
        initialized(tool)?;
        out(num_cat)?.set(CATEGORIES.len() as c_int);
        Ok(())
    }
}

tool_fn! {
    /// `MPI_T_category_get_info`: a category's name, description (what the layer is) and how
    /// many control variables, performance variables and subcategories it has.
    fn MPI_T_category_get_info / PMPI_T_category_get_info(
        cat_index: c_int,
        name: *mut c_char,
        name_len: *mut c_int,
        desc: *mut c_char,
        desc_len: *mut c_int,
        num_cvars: *mut c_int,
        num_pvars: *mut c_int,
        num_categories: *mut c_int,
    ) |st, tool| {
        initialized(tool)?;
        let i = index_in(cat_index, CATEGORIES.len())?;
        let c = &CATEGORIES[i];
        string_out(name, name_len, c.name)?;
        string_out(desc, desc_len, c.desc)?;
        set_if_wanted(num_cvars, cvars::in_category(i).len() as c_int);
        set_if_wanted(num_pvars, pvars::in_category(i).len() as c_int);
        set_if_wanted(num_categories, c.subcategories.len() as c_int);
        Ok(())
    }
}

tool_fn! {
    /// `MPI_T_category_get_index`: the index of the category called `name`
    /// (`MPI_T_ERR_INVALID_NAME` if there is none).
    fn MPI_T_category_get_index / PMPI_T_category_get_index(name: *const c_char, cat_index: *mut c_int) |st, tool| {
        initialized(tool)?;
        let index = out(cat_index)?;
        let i = catalog::category_index(&name_in(name)?).ok_or(MPI_T_ERR_INVALID_NAME)?;
        index.set(i as c_int);
        Ok(())
    }
}

tool_fn! {
    /// `MPI_T_category_get_cvars`: the indexes of the first `len` control variables of a category.
    fn MPI_T_category_get_cvars / PMPI_T_category_get_cvars(cat_index: c_int, len: c_int, indices: *mut c_int) |st, tool| {
        initialized(tool)?;
        let i = index_in(cat_index, CATEGORIES.len())?;
        indices_out(indices, len, &cvars::in_category(i))
    }
}

tool_fn! {
    /// `MPI_T_category_get_pvars`: the indexes of the first `len` performance variables of a
    /// category.
    fn MPI_T_category_get_pvars / PMPI_T_category_get_pvars(cat_index: c_int, len: c_int, indices: *mut c_int) |st, tool| {
        initialized(tool)?;
        let i = index_in(cat_index, CATEGORIES.len())?;
        indices_out(indices, len, &pvars::in_category(i))
    }
}

tool_fn! {
    /// `MPI_T_category_get_categories`: the indexes of the first `len` subcategories.
    fn MPI_T_category_get_categories / PMPI_T_category_get_categories(cat_index: c_int, len: c_int, indices: *mut c_int) |st, tool| {
        initialized(tool)?;
        let i = index_in(cat_index, CATEGORIES.len())?;
        indices_out(indices, len, CATEGORIES[i].subcategories)
    }
}

tool_fn! {
    /// `MPI_T_category_changed`: the categories never change in this library: always 0.
    fn MPI_T_category_changed / PMPI_T_category_changed(update_number: *mut c_int) |st, tool| {
        initialized(tool)?;
        out(update_number)?.set(0);
        Ok(())
    }
}

tool_fn! {
    /// `MPI_T_category_get_num_events`: 0 (the library has no event types).
    fn MPI_T_category_get_num_events / PMPI_T_category_get_num_events(cat_index: c_int, num_events: *mut c_int) |st, tool| {
        initialized(tool)?;
        index_in(cat_index, CATEGORIES.len())?;
        out(num_events)?.set(0);
        Ok(())
    }
}

tool_fn! {
    /// `MPI_T_category_get_events`: writes nothing (the library has no event types).
    fn MPI_T_category_get_events / PMPI_T_category_get_events(cat_index: c_int, len: c_int, indices: *mut c_int) |st, tool| {
        initialized(tool)?;
        index_in(cat_index, CATEGORIES.len())?;
        indices_out(indices, len, &[])
    }
}
